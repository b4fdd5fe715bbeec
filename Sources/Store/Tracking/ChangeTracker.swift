import CSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Collects the rows each transaction of the writer changes and hands them
/// over when the transaction commits; forgets them when it rolls back.
///
/// Two ways to capture, chosen when the tracker is made:
/// - SQLite's **preupdate hook**, when the library has it (Debian's does;
///   Apple's may not): it reports every row change, with the old and new
///   rowid of an UPDATE, rows deleted by `REPLACE`, and (with the hook set)
///   SQLite never uses its truncate optimization.
/// - Otherwise the **update hook**, which reports an UPDATE under its new
///   rowid only and never reports rows that `REPLACE` deletes. The
///   authorizer makes up for it: a statement that can change a rowid
///   (an UPDATE of the rowid or its INTEGER PRIMARY KEY alias) or replace
///   rows (an INSERT or UPDATE on a table with a unique index) marks its
///   table "unknown" when it runs, so observers re-read that table; and
///   `DELETE FROM t` is kept from skipping the hook.
///
/// Used only on the writer's queue.
final class ChangeTracker: TransactionObserver {
    /// How rows are captured.
    enum Capture: Sendable {
        case preupdateHook
        case updateHook
    }

    let capture: Capture
    /// Whether anything observes the store; when not, nothing is recorded.
    var isTracking = false {
        didSet { if isTracking != oldValue, isTracking { factsGeneration = -1 } }
    }
    /// Observations the current transaction must not notify.
    var silenced: Set<ObjectIdentifier> = []
    /// Called with each committed transaction's changes (after COMMIT, on
    /// the writer's queue, before the next transaction can begin).
    var onCommit: (ChangedRows, Set<ObjectIdentifier>) -> Void = { _, _ in }

    /// The current transaction's changes.
    private var current = ChangedRows()
    /// Transactions whose commit hook ran, not yet reported.
    private var committing: [(ChangedRows, Set<ObjectIdentifier>)] = []
    // The table of the last change, to avoid making a String per changed row.
    private var currentTable: String?
    private var currentTableCString: [CChar] = []
    private var currentRowIDs: Set<Int64> = []
    private var schemaGeneration: Int
    private unowned let db: Database
    /// The change log's writer, when this store logs with the preupdate hook.
    var log: LogWriter?

    /// For the update-hook fallback: what the authorizer needs to know of
    /// each table, read outside the authorizer (which must not run SQL).
    private var facts: [String: TableFacts] = [:]
    private var factsGeneration = -1
    private struct TableFacts {
        var rowIDNames: Set<String>
        var canReplace: Bool
    }
    /// The table a DROP statement being prepared drops: SQLite checks
    /// SQLITE_DELETE on it right after, and SQLITE_IGNORE there would make
    /// the DROP a silent no-op.
    private var droppingTable: [CChar] = []

    /// Installs the hooks on the writer. `capture` defaults to the preupdate
    /// hook when the SQLite library has one.
    init(db: Database, capture: Capture? = nil) {
        self.db = db
        schemaGeneration = db.schema.generation
        let preupdate = PreupdateHook.install
        self.capture = capture ?? (preupdate == nil ? .updateHook : .preupdateHook)
        let context = Unmanaged.passUnretained(self).toOpaque()
        let handle = db.connection.handle
        if self.capture == .preupdateHook, let preupdate {
            _ = preupdate(handle, { context, _, operation, database, table, oldRowID, newRowID in
                guard let context, let table, let database, strcmp(database, "main") == 0 else { return }
                let tracker = Unmanaged<ChangeTracker>.fromOpaque(context).takeUnretainedValue()
                guard strncmp(table, "sluice_", 7) != 0 else { return }
                tracker.log?.capture(operation: operation, table: table, oldRowID: oldRowID, newRowID: newRowID)
                // > For an UPDATE or DELETE operation on a rowid table, the sixth
                // > parameter passed to the preupdate callback is the initial rowid
                // > of the row being modified or deleted. For an INSERT or UPDATE
                // > operation on a rowid table, the seventh parameter is the final
                // > rowid value of the row being inserted or updated.
                if operation != SQLITE_INSERT { tracker.record(table: table, rowID: oldRowID) }
                if operation != SQLITE_DELETE, operation == SQLITE_INSERT || newRowID != oldRowID {
                    tracker.record(table: table, rowID: newRowID)
                }
            }, context)
        } else {
            sqlite3_update_hook(handle, { context, _, _, table, rowID in
                guard let context, let table, strncmp(table, "sluice_", 7) != 0 else { return }
                Unmanaged<ChangeTracker>.fromOpaque(context).takeUnretainedValue().record(table: table, rowID: rowID)
            }, context)
            db.connection.authorizerDelegate = { [unowned self] action, table, column, notes in
                authorize(action, table, column, &notes)
            }
        }
        db.transactionPath?.add(self)
    }

    /// Removes the hooks; call before the connection closes.
    func uninstall() {
        let handle = db.connection.handle
        if capture == .preupdateHook, let preupdate = PreupdateHook.install {
            _ = preupdate(handle, nil, nil)
        } else {
            sqlite3_update_hook(handle, nil, nil)
            db.connection.authorizerDelegate = nil
        }
        db.transactionPath?.remove(self)
    }

    // MARK: - Recording

    private func record(table: UnsafePointer<CChar>, rowID: Int64) {
        guard isTracking else { return }
        if currentTable == nil || strcmp(table, currentTableCString) != 0 {
            flushCurrentTable()
            let name = String(cString: table)
            currentTable = name
            currentTableCString = Array(name.utf8CString)
        }
        currentRowIDs.insert(rowID)
    }

    private func flushCurrentTable() {
        if let currentTable, !currentRowIDs.isEmpty {
            current.insert(currentRowIDs, in: currentTable)
        }
        currentTable = nil
        currentRowIDs = []
    }

    func databaseDidChange(untrackedTables tables: [String], committed: Bool) {
        guard isTracking else { return }
        if committed, !committing.isEmpty {
            for table in tables { committing[committing.count - 1].0.markUnknown(table) }
        } else {
            for table in tables { current.markUnknown(table) }
        }
    }

    // MARK: - TransactionObserver

    func databaseWillCommit() {
        flushCurrentTable()
        committing.append((current, silenced))
        current = ChangedRows()
    }

    func databaseCommitDidFail() {
        guard let (changes, _) = committing.popLast() else { return }
        var restored = changes
        restored.formUnion(current)
        current = restored
    }

    func databaseDidRollback() {
        currentTable = nil
        currentRowIDs = []
        current = ChangedRows()
    }

    func databaseDidCommit(_ db: Database) {
        var changes = ChangedRows()
        var silenced: Set<ObjectIdentifier>? = nil
        for (committed, quiet) in committing {
            changes.formUnion(committed)
            silenced = silenced.map { $0.intersection(quiet) } ?? quiet
        }
        committing = []
        // This connection's own DDL drops the schema cache as it runs, and
        // so does another connection's, seen at BEGIN: either way the
        // schema may differ from what observers planned with.
        if db.schema.generation != schemaGeneration {
            schemaGeneration = db.schema.generation
            changes.schemaChanged = true
        }
        guard isTracking else { return }
        onCommit(changes, silenced ?? [])
    }

    // MARK: - The update-hook fallback's authorizer

    private func authorize(_ action: Int32, _ table: UnsafePointer<CChar>?, _ column: UnsafePointer<CChar>?, _ notes: inout StatementNotes) -> Int32 {
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
            // > If the action code is SQLITE_DELETE and the callback returns
            // > SQLITE_IGNORE then the DELETE operation proceeds but the truncate
            // > optimization is disabled and all rows are deleted individually.
            return strncmp(table, "sqlite_", 7) == 0 ? SQLITE_OK : SQLITE_IGNORE
        case SQLITE_INSERT, SQLITE_UPDATE:
            guard let table, strncmp(table, "sqlite_", 7) != 0 else { return SQLITE_OK }
            let name = String(cString: table)
            guard let facts = facts[name] else {
                // Not known yet (created in this transaction): assume the worst.
                notes.untrackedTables.append(name)
                return SQLITE_OK
            }
            if facts.canReplace {
                notes.untrackedTables.append(name)
            } else if action == SQLITE_UPDATE, let column, facts.rowIDNames.contains(String(cString: column).lowercased()) {
                notes.untrackedTables.append(name)
            }
            return SQLITE_OK
        default:
            return SQLITE_OK
        }
    }

    /// Reads what the fallback's authorizer needs of every table (outside
    /// the authorizer, before statements are prepared).
    func refreshFacts() {
        guard capture == .updateHook, isTracking, factsGeneration != db.schema.generation else { return }
        factsGeneration = db.schema.generation
        facts = [:]
        for name in (try? db.tableNames()) ?? [] {
            guard let info = try? db.tableInfo(name), info.kind == .table else { continue }
            var rowIDNames: Set<String> = ["rowid", "oid", "_rowid_"]
            if info.hasIntegerPrimaryKey { rowIDNames.insert(info.primaryKey[0].lowercased()) }
            facts[info.name] = TableFacts(rowIDNames: rowIDNames, canReplace: info.hasUniqueIndex)
        }
    }
}

// The tracker belongs to the writer's queue.
@available(*, unavailable)
extension ChangeTracker: Sendable {}

/// `sqlite3_preupdate_hook`, looked up at run time: it exists only when the
/// SQLite library was compiled with `SQLITE_ENABLE_PREUPDATE_HOOK`.
enum PreupdateHook {
    typealias Callback = @convention(c) (
        UnsafeMutableRawPointer?, OpaquePointer?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?, sqlite3_int64, sqlite3_int64
    ) -> Void
    typealias Install = @convention(c) (OpaquePointer?, Callback?, UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?

    typealias Read = @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Int32
    typealias Count = @convention(c) (OpaquePointer?) -> Int32

    /// The library's `sqlite3_preupdate_hook`, or nil when it has none.
    static let install: Install? = symbol("sqlite3_preupdate_hook", as: Install.self)
    /// `sqlite3_preupdate_old`: a column's value before the change.
    static let old: Read? = symbol("sqlite3_preupdate_old", as: Read.self)
    /// `sqlite3_preupdate_new`: a column's value after the change.
    static let new: Read? = symbol("sqlite3_preupdate_new", as: Read.self)
    /// `sqlite3_preupdate_count`: the number of columns of the row.
    static let count: Count? = symbol("sqlite3_preupdate_count", as: Count.self)

    private static func symbol<T>(_ name: String, as type: T.Type) -> T? {
        guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, name) else { return nil }
        return unsafeBitCast(symbol, to: type)
    }
}
