import CSQLite
import Foundation

/// Writes the change log for one Sluice writer: every transaction it
/// commits records what it changed, in the same transaction.
///
/// Two ways to capture, as the change tracker:
/// - With SQLite's **preupdate hook**, each row change is captured with its
///   old and new values as it happens (rows deleted by `REPLACE` and by
///   foreign-key cascades included), kept in memory, and written to the log
///   by `Database.commit()` just before COMMIT. A savepoint rolled back
///   drops what it captured; a rollback drops everything.
/// - Without it, **temporary triggers** on every table write the log as
///   rows change (the same SQL as the foreign-writer triggers, but on this
///   connection only), with `recursive_triggers` on so that `REPLACE`
///   deletions fire them. They are dropped before any statement that
///   changes the schema (SQLite refuses to drop a column a trigger names)
///   and installed again before the next statement.
///
/// Used only on the writer's queue.
final class LogWriter: TransactionObserver {
    enum Capture: Sendable {
        case preupdateHook
        case triggers
    }

    let capture: Capture
    private unowned let db: Database

    private enum Operation: String {
        case insert, update, delete
    }

    private struct Entry {
        var table: String
        var operation: Operation
        var rowID: Int64
        var oldRowID: Int64
        var old: [SQLiteValue]?
        var new: [SQLiteValue]?
    }

    /// The sequence of the last transaction this writer logged (set just
    /// before its COMMIT; read after it on the writer's queue).
    private(set) var lastSequence: Int64?

    // Preupdate capture.
    /// The schema generation at which the log's tables were last seen.
    private var logTablesGeneration: Int?
    private var entries: [Entry] = []
    private var savepointMarks: [Int] = []
    private var currentTable: String?
    private var currentTableCString: [CChar] = []

    // Trigger capture.
    private var installedGeneration: Int?
    private var installedTables: [String] = []
    private var transactionNumber: Int64 = 0
    private let connectionID = String(UInt64.random(in: 0...UInt64.max), radix: 36)
    private var installing = false

    init(db: Database, capture: Capture) {
        self.db = db
        self.capture = capture
        db.connection.silencesForeignTriggers = true
        db.transactionPath?.add(self)
        if capture == .triggers {
            registerTokenFunction()
            db.connection.statementWillRun = { [unowned self] notes in statementWillRun(notes) }
        }
    }

    func uninstall() {
        db.transactionPath?.remove(self)
        db.connection.statementWillRun = nil
    }

    // MARK: - Preupdate capture

    /// Called from the preupdate hook (no SQL may run here).
    func capture(operation: Int32, table: UnsafePointer<CChar>, oldRowID: Int64, newRowID: Int64) {
        guard let count = PreupdateHook.count, let readOld = PreupdateHook.old, let readNew = PreupdateHook.new else { return }
        let handle = db.connection.handle
        let columns = count(handle)
        func read(_ reader: PreupdateHook.Read) -> [SQLiteValue] {
            var values: [SQLiteValue] = []
            values.reserveCapacity(Int(columns))
            for index in 0..<columns {
                var value: OpaquePointer?
                if reader(handle, index, &value) == SQLITE_OK, let value {
                    values.append(StatementHandle.value(value))
                } else {
                    values.append(.null)
                }
            }
            return values
        }
        if currentTable == nil || strcmp(table, currentTableCString) != 0 {
            let name = String(cString: table)
            currentTable = name
            currentTableCString = Array(name.utf8CString)
        }
        let name = currentTable ?? String(cString: table)
        switch operation {
        case SQLITE_INSERT:
            entries.append(Entry(table: name, operation: .insert, rowID: newRowID, oldRowID: newRowID, old: nil, new: read(readNew)))
        case SQLITE_DELETE:
            entries.append(Entry(table: name, operation: .delete, rowID: oldRowID, oldRowID: oldRowID, old: read(readOld), new: nil))
        default:
            entries.append(Entry(table: name, operation: .update, rowID: newRowID, oldRowID: oldRowID, old: read(readOld), new: read(readNew)))
        }
    }

    // MARK: - TransactionObserver

    func databaseWillCommitTransaction(_ db: Database) throws {
        switch capture {
        case .preupdateHook:
            guard !entries.isEmpty else { return }
            try flush(db)
        case .triggers:
            // The triggers wrote the changes; the transaction row gets its author now.
            guard let seq = try openTransaction(db) else { return }
            lastSequence = seq
            try db.execute(sql: "UPDATE sluice_transaction SET author = ? WHERE seq = ?",
                           arguments: [db.transactionAuthor.map { .text($0) } ?? .null, .integer(seq)])
        }
    }

    func databaseWillCommit() {}
    func databaseCommitDidFail() {}

    func databaseDidCommit(_ db: Database) {
        entries = []
        savepointMarks = []
        transactionNumber += 1
    }

    func databaseDidRollback() {
        entries = []
        savepointMarks = []
        transactionNumber += 1
    }

    func databaseDidChange(untrackedTables tables: [String], committed: Bool) {}

    func databaseDidBeginSavepoint() {
        savepointMarks.append(entries.count)
    }

    func databaseDidEndSavepoint(rolledBack: Bool) {
        guard let mark = savepointMarks.popLast() else { return }
        if rolledBack, mark <= entries.count { entries.removeSubrange(mark...) }
    }

    // MARK: - Writing the log (preupdate capture)

    private func flush(_ db: Database) throws {
        if logTablesGeneration != db.schema.generation {
            try ChangeLog.create(db)    // dropped by someone since, or never made
            logTablesGeneration = db.schema.generation
        }
        let captured = entries
        entries = []
        var rows: [(values: [SQLiteValue], old: [UInt8]?, new: [UInt8]?)] = []
        rows.reserveCapacity(captured.count)
        var tables: [String: (info: TableInfo, names: [String], stored: [Int], key: [Int])] = [:]
        for entry in captured {
            let table: (info: TableInfo, names: [String], stored: [Int], key: [Int])
            if let known = tables[entry.table] {
                table = known
            } else {
                let info = try db.tableInfo(entry.table)
                let names = info.columnNames
                // Generated columns are derived, not logged (the preupdate hook reads VIRTUAL ones as NULL).
                let stored = info.columns.indices.filter { !info.columns[$0].isGenerated }
                let key = info.primaryKey.compactMap { column in names.firstIndex { $0.lowercased() == column.lowercased() } }
                table = (info, names, stored, key)
                tables[entry.table] = table
            }
            var old: [UInt8]?
            var new: [UInt8]?
            switch entry.operation {
            case .insert:
                new = entry.new.map { LogValues.encode(names: table.names, values: $0, columns: table.stored) }
            case .delete:
                old = entry.old.map { LogValues.encode(names: table.names, values: $0, columns: table.stored) }
            case .update:
                guard let before = entry.old, let after = entry.new else { continue }
                let changed = table.stored.filter { $0 < after.count && ($0 >= before.count || before[$0] != after[$0]) }
                guard !changed.isEmpty || entry.rowID != entry.oldRowID else { continue }
                old = LogValues.encode(names: table.names, values: before, columns: changed)
                new = LogValues.encode(names: table.names, values: after, columns: changed)
            }
            let values = entry.new ?? entry.old ?? []
            let key: SQLiteValue
            if table.info.primaryKey == ["rowid"] || table.info.hasIntegerPrimaryKey || table.key.isEmpty {
                key = .integer(entry.rowID)
            } else if table.key.count == 1 {
                key = table.key[0] < values.count ? values[table.key[0]] : .null
            } else {
                var json: [UInt8] = [UInt8(ascii: "[")]
                for (offset, index) in table.key.enumerated() {
                    if offset > 0 { json.append(UInt8(ascii: ",")) }
                    LogValues.append(index < values.count ? values[index] : .null, to: &json)
                }
                json.append(UInt8(ascii: "]"))
                key = .text(String(decoding: json, as: UTF8.self))
            }
            rows.append(([
                .text(entry.table), .text(entry.operation.rawValue), .integer(table.info.kind == .withoutRowID ? 0 : entry.rowID),
                entry.oldRowID != entry.rowID ? .integer(entry.oldRowID) : .null, key,
            ], old, new))
        }
        guard !rows.isEmpty else { return }    // only updates that changed nothing
        try db.execute(sql: "INSERT INTO sluice_transaction (at, author) VALUES (?, ?)",
                       arguments: [.integer(Self.now()), db.transactionAuthor.map { .text($0) } ?? .null])
        let seq = db.lastInsertedRowID
        lastSequence = seq
        let statement = try db.connection.cachedStatement(sql: """
            INSERT INTO sluice_change (seq, tbl, op, row_id, old_row_id, key, old, new) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
        defer { statement.reset() }
        for row in rows {
            statement.reset()
            try statement.bind(.integer(seq), at: 1)
            for (offset, value) in row.values.enumerated() { try statement.bind(value, at: Int32(offset + 2)) }
            if let old = row.old { try statement.bindText(utf8: old, at: 7) }
            if let new = row.new { try statement.bindText(utf8: new, at: 8) }
            while try statement.step() {}
        }
    }

    static func now() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded())
    }

    // MARK: - Trigger capture

    /// `sluice_txn()`: this connection's current transaction, for the triggers.
    private func registerTokenFunction() {
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_create_function_v2(db.connection.handle, "sluice_txn", 0, SQLITE_UTF8, context, { context, _, _ in
            guard let data = sqlite3_user_data(context) else { return }
            let writer = Unmanaged<LogWriter>.fromOpaque(data).takeUnretainedValue()
            var token = Array("\(writer.connectionID).\(writer.transactionNumber)".utf8CString)
            sqlite3_result_text(context, &token, -1, _sluice_transient())
        }, nil, nil, nil)
    }

    /// The sequence of the transaction row this transaction's triggers made, if any.
    private func openTransaction(_ db: Database) throws -> Int64? {
        if logTablesGeneration != db.schema.generation {
            guard try ChangeLog.exists(db) else { return nil }
            logTablesGeneration = db.schema.generation
        }
        let rows = try db.fetchRows(sql: "SELECT seq FROM sluice_transaction WHERE seq = (SELECT max(seq) FROM sluice_transaction) AND token = sluice_txn()")
        return rows.first.flatMap { Int64(sqliteValue: $0[0]) }
    }

    private func statementWillRun(_ notes: StatementNotes) {
        guard !installing else { return }
        if notes.changesSchema {
            removeTriggers()
        } else if installedGeneration != db.schema.generation {
            installTriggers()
        }
    }

    private func removeTriggers() {
        guard installedGeneration != nil else { return }
        installing = true
        defer { installing = false }
        for table in installedTables {
            for operation in ["insert", "update", "delete"] {
                try? db.connection.execute(script: "DROP TRIGGER IF EXISTS temp.\(quoteIdentifier("sluice_capture_\(table)_\(operation)"))")
            }
        }
        installedTables = []
        installedGeneration = nil
    }

    private func installTriggers() {
        removeTriggers()
        installing = true
        defer { installing = false }
        do {
            try db.connection.execute(script: "PRAGMA recursive_triggers = ON")
            guard try ChangeLog.exists(db) else { return }
            for name in try db.tableNames() {
                guard let info = try? db.tableInfo(name), info.kind == .table else { continue }
                for sql in LogTriggers.sql(for: info, temporary: true) {
                    try db.connection.execute(script: sql)
                }
                installedTables.append(info.name)
            }
            installedGeneration = db.schema.generation
        } catch {
            // Left uninstalled: tried again before the next statement.
        }
    }
}

// The log writer belongs to the writer's queue.
@available(*, unavailable)
extension LogWriter: Sendable {}
