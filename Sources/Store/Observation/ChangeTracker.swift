import CSQLite
import Foundation

/// Collects the rowids each transaction of the writer changes, through
/// SQLite's update hook, and notices commits by other connections through
/// `PRAGMA data_version`.
///
/// Used only on the writer's queue.
final class ChangeTracker {
    /// Whether anything observes the store; when not, the hook records nothing.
    var isTracking = false
    private var changes: [String: Set<Int64>] = [:]
    // The table of the last change, to avoid making a String per changed row.
    private var currentTable: String?
    private var currentTableCString: [CChar] = []
    private var currentRowIDs: Set<Int64> = []
    private var lastDataVersion: Int64?
    private var schemaVersionAtBegin: Int64?
    private unowned let connection: Connection

    init(connection: Connection) {
        self.connection = connection
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_update_hook(connection.handle, { context, _, _, table, rowID in
            guard let context, let table else { return }
            Unmanaged<ChangeTracker>.fromOpaque(context).takeUnretainedValue().record(table: table, rowID: rowID)
        }, context)
        // > If the action code is SQLITE_DELETE and the callback returns
        // > SQLITE_IGNORE then the DELETE operation proceeds but the truncate
        // > optimization is disabled and all rows are deleted individually.
        // The truncate optimization deletes without calling the update hook.
        sqlite3_set_authorizer(connection.handle, { context, action, table, _, _, _ in
            guard let context else { return SQLITE_OK }
            return Unmanaged<ChangeTracker>.fromOpaque(context).takeUnretainedValue().authorize(action, table)
        }, context)
    }

    /// The table a DROP statement being prepared drops: SQLite checks
    /// SQLITE_DELETE on it right after, and SQLITE_IGNORE there would make
    /// the DROP a silent no-op.
    private var droppingTable: [CChar] = []

    private func authorize(_ action: Int32, _ table: UnsafePointer<CChar>?) -> Int32 {
        switch action {
        case SQLITE_DROP_TABLE, SQLITE_DROP_TEMP_TABLE, SQLITE_DROP_VIEW, SQLITE_DROP_TEMP_VIEW:
            droppingTable = table.map { Array(String(cString: $0).utf8CString) } ?? []
            return SQLITE_OK
        case SQLITE_DELETE:
            guard let table else { return SQLITE_OK }
            if !droppingTable.isEmpty, strcmp(table, droppingTable) == 0 {
                droppingTable = []
                return SQLITE_OK
            }
            return strncmp(table, "sqlite_", 7) == 0 ? SQLITE_OK : SQLITE_IGNORE
        default:
            return SQLITE_OK
        }
    }

    /// Removes the hooks; call before the connection closes.
    func uninstall() {
        sqlite3_update_hook(connection.handle, nil, nil)
        sqlite3_set_authorizer(connection.handle, nil, nil)
    }

    private func record(table: UnsafePointer<CChar>, rowID: Int64) {
        guard isTracking else { return }
        if currentTable == nil || strcmp(table, currentTableCString) != 0 {
            flushCurrentTable()
            let name = String(cString: table)
            currentTable = name
            currentTableCString = Array(name.utf8CString)
            currentRowIDs = changes.removeValue(forKey: name) ?? []
        }
        currentRowIDs.insert(rowID)
    }

    private func flushCurrentTable() {
        if let currentTable, !currentRowIDs.isEmpty {
            changes[currentTable] = currentRowIDs
        }
        currentTable = nil
        currentRowIDs = []
    }

    /// Call at the start of a write transaction.
    func transactionBegan() {
        schemaVersionAtBegin = isTracking ? try? connection.scalarInt(sql: "PRAGMA schema_version") : nil
    }

    /// The rowids changed since the transaction began, by table; nil when
    /// the schema changed (DROP, ALTER: the update hook does not see those),
    /// so observers must re-read everything.
    func takeChanges() -> [String: Set<Int64>]? {
        flushCurrentTable()
        defer { changes = [:] }
        if let schemaVersionAtBegin, (try? connection.scalarInt(sql: "PRAGMA schema_version")) != schemaVersionAtBegin {
            return nil
        }
        return changes
    }

    /// Forgets what a rolled-back transaction changed.
    func discardChanges() {
        currentTable = nil
        currentRowIDs = []
        changes = [:]
    }

    /// Whether another connection committed since the last call.
    ///
    /// > The integer values returned by two invocations of "PRAGMA
    /// > data_version" from the same connection will be different if changes
    /// > were committed to the database by any other connection in the interim.
    func otherConnectionCommitted() -> Bool {
        guard let version = try? connection.scalarInt(sql: "PRAGMA data_version") else { return false }
        defer { lastDataVersion = version }
        guard let lastDataVersion else { return false }
        return version != lastDataVersion
    }

    /// Starts comparing data versions from now on.
    func resetDataVersion() {
        lastDataVersion = try? connection.scalarInt(sql: "PRAGMA data_version")
    }
}

// The tracker belongs to the writer's queue.
@available(*, unavailable)
extension ChangeTracker: Sendable {}
