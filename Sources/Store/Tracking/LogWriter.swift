import CSQLite
import Foundation

/// Writes the change log for one Sluice writer: every transaction it
/// commits records what it changed, in the same transaction.
///
/// Two ways to capture, as the change tracker:
/// - With SQLite's **preupdate hook**, each row change is captured as it
///   happens (rows deleted by `REPLACE` and by foreign-key cascades
///   included), kept in memory, and written to the log by
///   `Database.commit()` just before COMMIT. A savepoint rolled back drops
///   what it captured; a rollback drops everything. Updates and deletes are
///   captured with their values. An insert into a rowid table is captured
///   by its rowid only: its values are still in the table at commit, where
///   one `INSERT ... SELECT` per run of consecutive rowids writes them to
///   the log without bringing them into Swift (bulk inserts cost little).
///   The first later change to that row (its old values are the inserted
///   ones) or a schema change in the transaction takes its values first.
/// - Without it, **temporary triggers** on every table write the log as
///   rows change (`TemporaryLogTriggers`); this writer then gives the
///   transaction row its author at commit.
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
        /// Nil for an insert captured by its rowid (its values are in the table).
        var new: [SQLiteValue]?
        /// The table's shape when its schema changed later in the transaction (an index in `shapes`).
        var shape: Int?

        var isByReference: Bool { operation == .insert && new == nil }
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
    /// Whether `currentTable`'s inserts are captured by rowid, as of `currentTableGeneration`.
    private var currentTableByReference = false
    private var currentTableGeneration: Int?
    /// Tables whose inserts may be captured by rowid (rowid tables with no
    /// column named `rowid`), as of schema generation `byReferenceGeneration`.
    private var byReferenceTables: Set<String> = []
    private var byReferenceGeneration: Int?
    /// Inserts captured by rowid and not changed since: table → rowid →
    /// index in `entries`, for the entries before `pendingIndexedThrough`
    /// (made only when a later change needs it: a bulk insert never pays).
    private var pendingInserts: [String: [Int64: Int]] = [:]
    private var pendingIndexedThrough = 0
    /// Whether any entry is an insert captured by rowid.
    private var hasByReferenceEntries = false
    /// Tables' columns as they were before a schema change in this
    /// transaction, for the entries captured before it.
    private var shapes: [LoggedTable] = []
    /// Entries before this index have their shape (or their table's current one).
    private var shapedThrough = 0

    /// The temporary triggers, when capturing without the preupdate hook.
    private let triggers: TemporaryLogTriggers?

    init(db: Database, capture: Capture) {
        self.db = db
        self.capture = capture
        triggers = capture == .triggers ? TemporaryLogTriggers(db: db) : nil
        db.connection.silencesForeignTriggers = true
        db.transactionPath?.add(self)
        LogValues.registerObjectFunction(on: db.connection.handle)
        db.connection.statementWillRun = { [unowned self] notes in statementWillRun(notes) }
        refreshByReferenceTables(db)
    }

    func uninstall() {
        db.transactionPath?.remove(self)
        db.connection.statementWillRun = nil
    }

    // MARK: - Preupdate capture

    /// Called from the preupdate hook (no SQL may run here).
    func capture(operation: Int32, table: UnsafePointer<CChar>, oldRowID: Int64, newRowID: Int64) {
        guard let readOld = PreupdateHook.old, let readNew = PreupdateHook.new else { return }
        let generation = db.schema.generation
        if currentTable == nil || currentTableGeneration != generation || strcmp(table, currentTableCString) != 0 {
            let name = String(cString: table)
            currentTable = name
            currentTableCString = Array(name.utf8CString)
            currentTableGeneration = generation
            currentTableByReference = byReferenceGeneration == generation && byReferenceTables.contains(name)
        }
        let name = currentTable ?? String(cString: table)
        switch operation {
        case SQLITE_INSERT:
            if currentTableByReference {
                entries.append(Entry(table: name, operation: .insert, rowID: newRowID, oldRowID: newRowID, old: nil, new: nil, shape: nil))
                hasByReferenceEntries = true
            } else {
                entries.append(Entry(table: name, operation: .insert, rowID: newRowID, oldRowID: newRowID, old: nil, new: read(readNew), shape: nil))
            }
        case SQLITE_DELETE:
            let old = read(readOld)
            settleInsert(table: name, rowID: oldRowID, values: old)
            entries.append(Entry(table: name, operation: .delete, rowID: oldRowID, oldRowID: oldRowID, old: old, new: nil, shape: nil))
        default:
            let old = read(readOld)
            settleInsert(table: name, rowID: oldRowID, values: old)
            entries.append(Entry(table: name, operation: .update, rowID: newRowID, oldRowID: oldRowID, old: old, new: read(readNew), shape: nil))
        }
    }

    /// The values of the row being changed, before (`PreupdateHook.old`) or after (`.new`) the change.
    private func read(_ reader: PreupdateHook.Read) -> [SQLiteValue] {
        guard let count = PreupdateHook.count else { return [] }
        let handle = db.connection.handle
        let columns = count(handle)
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

    /// A row inserted by reference in this transaction is about to change:
    /// its old values are the inserted ones.
    private func settleInsert(table: String, rowID: Int64, values: [SQLiteValue]) {
        guard hasByReferenceEntries else { return }
        indexPendingInserts()
        guard let index = pendingInserts[table]?.removeValue(forKey: rowID) else { return }
        entries[index].new = values
    }

    /// Adds the inserts captured by rowid since the last call to `pendingInserts`.
    private func indexPendingInserts() {
        for index in pendingIndexedThrough..<entries.count where entries[index].isByReference {
            pendingInserts[entries[index].table, default: [:]][entries[index].rowID] = index
        }
        pendingIndexedThrough = entries.count
    }

    /// Before a statement that may drop or reshape tables: reads the values
    /// of every insert still captured by reference, and keeps the shape of
    /// the tables of the entries so far (their values are by column position).
    private func keepShapes() throws {
        try settlePendingInserts()
        var shapeOfTable: [String: Int] = [:]
        for index in shapedThrough..<entries.count where entries[index].shape == nil {
            let table = entries[index].table
            if let known = shapeOfTable[table] {
                entries[index].shape = known
            } else {
                shapes.append(LoggedTable(try db.tableInfo(table)))
                shapeOfTable[table] = shapes.count - 1
                entries[index].shape = shapes.count - 1
            }
        }
        shapedThrough = entries.count
    }

    private func settlePendingInserts() throws {
        indexPendingInserts()
        let pending = pendingInserts
        pendingInserts = [:]
        hasByReferenceEntries = false
        for (table, rows) in pending {
            let info = try db.tableInfo(table)
            let statement = try db.connection.cachedStatement(
                sql: "SELECT \(info.columns.map { quoteIdentifier($0.name) }.joined(separator: ", ")) FROM main.\(quoteIdentifier(table)) WHERE rowid = ?")
            defer { statement.reset() }
            for (rowID, index) in rows {
                statement.reset()
                try statement.bind(.integer(rowID), at: 1)
                guard try statement.step() else { continue }
                entries[index].new = (0..<info.columns.count).map { statement.value(at: Int32($0)) }
            }
        }
    }

    /// Which tables' inserts may be captured by rowid, read outside the hook after a schema change.
    private func refreshByReferenceTables(_ db: Database) {
        guard capture == .preupdateHook else { return }
        db.schema.refreshIfChanged()    // notes the schema version, so the next transaction does not drop the cache again
        guard byReferenceGeneration != db.schema.generation else { return }
        var tables: Set<String> = []
        for name in (try? db.tableNames()) ?? [] {
            guard let info = try? db.tableInfo(name), info.kind == .table,
                  !info.columns.contains(where: { $0.name.lowercased() == "rowid" }) else { continue }
            tables.insert(info.name)
        }
        byReferenceTables = tables
        byReferenceGeneration = db.schema.generation
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
        endTransaction()
        refreshByReferenceTables(db)
    }

    func databaseDidRollback() {
        endTransaction()
    }

    /// Forgets what the transaction captured; the next one gets a new number.
    private func endTransaction() {
        entries = []
        pendingInserts = [:]
        pendingIndexedThrough = 0
        hasByReferenceEntries = false
        shapes = []
        shapedThrough = 0
        savepointMarks = []
        triggers?.transactionEnded()
    }

    func databaseDidChange(untrackedTables tables: [String], committed: Bool) {}

    func databaseDidBeginSavepoint() {
        savepointMarks.append(entries.count)
    }

    func databaseDidEndSavepoint(rolledBack: Bool) {
        guard let mark = savepointMarks.popLast() else { return }
        guard rolledBack, mark <= entries.count else { return }
        for entry in entries[mark..<max(mark, pendingIndexedThrough)] where entry.isByReference {
            pendingInserts[entry.table]?.removeValue(forKey: entry.rowID)
        }
        pendingIndexedThrough = min(pendingIndexedThrough, mark)
        entries.removeSubrange(mark...)
        shapedThrough = min(shapedThrough, mark)
    }

    // MARK: - Writing the log (preupdate capture)

    /// What the flush writes for one entry, or a run of inserts captured by rowid.
    private enum Write {
        case row(values: [SQLiteValue], old: [UInt8]?, new: [UInt8]?)
        case inserted(table: String, rowIDs: ClosedRange<Int64>)
    }

    private struct LoggedTable {
        var info: TableInfo
        var names: [String]
        var stored: [Int]
        var key: [Int]

        init(_ info: TableInfo) {
            self.info = info
            names = info.columnNames
            // Generated columns are derived, not logged (the preupdate hook reads VIRTUAL ones as NULL).
            stored = info.columns.indices.filter { !info.columns[$0].isGenerated }
            key = info.primaryKey.compactMap { column in info.columnNames.firstIndex { $0.lowercased() == column.lowercased() } }
        }
    }

    private func flush(_ db: Database) throws {
        if logTablesGeneration != db.schema.generation {
            try ChangeLog.create(db)    // dropped by someone since, or never made
            logTablesGeneration = db.schema.generation
        }
        let captured = entries
        let shapes = shapes
        entries = []
        pendingInserts = [:]
        pendingIndexedThrough = 0
        hasByReferenceEntries = false
        self.shapes = []
        shapedThrough = 0
        var writes: [Write] = []
        writes.reserveCapacity(captured.count)
        var tables: [String: LoggedTable] = [:]
        var index = captured.startIndex
        while index < captured.endIndex {
            let entry = captured[index]
            if entry.isByReference {
                // A run of inserts into one table with consecutive rowids: one INSERT ... SELECT.
                var last = index
                while last + 1 < captured.endIndex, captured[last + 1].isByReference, captured[last + 1].table == entry.table,
                      captured[last + 1].rowID == captured[last].rowID + 1 {
                    last += 1
                }
                writes.append(.inserted(table: entry.table, rowIDs: entry.rowID...captured[last].rowID))
                index = last + 1
                continue
            }
            index += 1
            let table: LoggedTable
            if let shape = entry.shape {
                table = shapes[shape]
            } else if let known = tables[entry.table] {
                table = known
            } else {
                table = LoggedTable(try db.tableInfo(entry.table))
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
                let json = LogJSON()
                json.append(UInt8(ascii: "["))
                for (offset, index) in table.key.enumerated() {
                    if offset > 0 { json.append(UInt8(ascii: ",")) }
                    json.append(index < values.count ? values[index] : .null)
                }
                json.append(UInt8(ascii: "]"))
                key = .text(String(decoding: json.bytes, as: UTF8.self))
            }
            writes.append(.row(values: [
                .text(entry.table), .text(entry.operation.rawValue), .integer(table.info.kind == .withoutRowID ? 0 : entry.rowID),
                entry.oldRowID != entry.rowID ? .integer(entry.oldRowID) : .null, key,
            ], old: old, new: new))
        }
        guard !writes.isEmpty else { return }    // only updates that changed nothing
        try db.execute(sql: "INSERT INTO sluice_transaction (at, author, first_change) VALUES (?, ?, \(ChangeLog.nextChangeID))",
                       arguments: [.integer(Self.now()), db.transactionAuthor.map { .text($0) } ?? .null])
        let seq = db.lastInsertedRowID
        lastSequence = seq
        let statement = try db.connection.cachedStatement(sql: """
            INSERT INTO sluice_change (seq, tbl, op, row_id, old_row_id, key, old, new) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
        defer { statement.reset() }
        for write in writes {
            switch write {
            case let .row(values, old, new):
                statement.reset()
                try statement.bind(.integer(seq), at: 1)
                for (offset, value) in values.enumerated() { try statement.bind(value, at: Int32(offset + 2)) }
                if let old { try statement.bindText(utf8: old, at: 7) }
                if let new { try statement.bindText(utf8: new, at: 8) }
                while try statement.step() {}
            case let .inserted(table, rowIDs):
                let info = try db.tableInfo(table)
                let copy = try db.connection.cachedStatement(sql: """
                    INSERT INTO sluice_change (seq, tbl, op, row_id, old_row_id, key, old, new)
                        SELECT ?1, \(LogTriggers.literal(table)), 'insert', r.rowid, NULL, \(LogTriggers.keyExpression(info, row: "r")), NULL, \(LogTriggers.objectExpression(info, row: "r", native: true))
                        FROM main.\(quoteIdentifier(table)) AS r WHERE r.rowid BETWEEN ?2 AND ?3 ORDER BY r.rowid
                    """)
                defer { copy.reset() }
                try copy.bind(.integer(seq), at: 1)
                try copy.bind(.integer(rowIDs.lowerBound), at: 2)
                try copy.bind(.integer(rowIDs.upperBound), at: 3)
                while try copy.step() {}
            }
        }
    }

    static func now() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded())
    }

    // MARK: - Trigger capture

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
        if let triggers {
            triggers.statementWillRun(notes)
        } else if notes.changesSchema, shapedThrough < entries.count {
            // Read values and columns while the tables still have them (a failure surfaces at commit).
            try? keepShapes()
        }
    }
}

// The log writer belongs to the writer's queue.
@available(*, unavailable)
extension LogWriter: Sendable {}
