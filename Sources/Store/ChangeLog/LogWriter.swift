import Foundation

/// Writes the change log for one Sluice writer: every transaction it
/// commits records what it changed, in the same transaction.
///
/// Two ways to capture, as the hook broker's capture:
/// - With SQLite's **preupdate hook**, the broker captures each row change
///   as it happens (rows deleted by `REPLACE` and by foreign-key cascades
///   included), savepoints applied, and this writer writes it to the log
///   from `Database.commit()` just before COMMIT. An insert into a rowid
///   table is captured by its rowid only: its values are still in the table
///   at commit, where one `INSERT ... SELECT` per run of consecutive rowids
///   writes them to the log without bringing them into Swift (bulk inserts
///   cost little).
/// - Without it, **temporary triggers** on every table write the log as
///   rows change (`TemporaryLogTriggers`), and a `ROLLBACK TO` undoes what
///   they wrote with the rest; this writer then gives the transaction row
///   its author at commit.
///
/// Used only on the writer's queue.
final class LogWriter: TransactionObserver {
    private unowned let broker: HookBroker

    /// The sequence of the last transaction this writer logged (set just
    /// before its COMMIT; read after it on the writer's queue).
    private(set) var lastSequence: Int64?
    /// The sequence the transaction under way was logged under, once it is
    /// (set just before its COMMIT; nil when it logged nothing).
    private(set) var sequenceOfThisTransaction: Int64?
    /// The schema generation at which the log's tables were last seen.
    private var logTablesGeneration: Int?
    /// The schema generation at which the foreign-writer triggers were last
    /// checked against their tables' columns.
    private var triggersCheckedGeneration: Int?

    /// The temporary triggers, when capturing without the preupdate hook.
    private let triggers: TemporaryLogTriggers?
    /// The file's commit counter: each logged transaction records the
    /// number its commit gets (the last one's, read while this writer holds
    /// the write lock, plus one).
    private let counter: CommitCounter

    /// Where the store's observations saw foreign writers' commits end:
    /// each write transaction first seals a foreign writer's open logged
    /// transaction there (`ChangeLog.sealForeignTransaction`).
    let foreignBoundaries: ForeignCommitBoundaries?

    init(db: Database, broker: HookBroker, foreignBoundaries: ForeignCommitBoundaries? = nil) {
        self.broker = broker
        self.foreignBoundaries = foreignBoundaries
        counter = CommitCounter(connection: db.connection)
        triggers = broker.capture == .updateHook ? TemporaryLogTriggers(db: db) : nil
        broker.recordsValues = broker.capture == .preupdateHook
        db.connection.silencedColumn = (ChangeLog.foreignGuardTable, ChangeLog.foreignGuardColumn)
        broker.add(self)
        LogValues.registerObjectFunction(on: db.connection.handle)
        refreshByReferenceTables(db)
        // The store checked the triggers when it opened (`ChangeLog.isCurrent`).
        triggersCheckedGeneration = db.schema.generation
    }

    func uninstall() {
        broker.recordsValues = false
        broker.remove(self)
    }

    /// Which tables' inserts may be captured by rowid, read outside the hook after a schema change.
    private func refreshByReferenceTables(_ db: Database) {
        guard broker.capture == .preupdateHook else { return }
        db.schema.refreshIfChanged()    // notes the schema version, so the next transaction does not drop the cache again
        guard broker.byReferenceGeneration != db.schema.generation else { return }
        var tables: Set<String> = []
        for name in (try? db.tableNames()) ?? [] {
            guard let info = try? db.tableInfo(name), info.kind == .table,
                  !info.columns.contains(where: { $0.name.lowercased() == "rowid" }) else { continue }
            tables.insert(info.name)
        }
        broker.byReferenceTables = tables
        broker.byReferenceGeneration = db.schema.generation
    }

    // MARK: - TransactionObserver

    func databaseDidBeginTransaction(_ db: Database) throws {
        sequenceOfThisTransaction = nil
        // Before this transaction logs a row of its own, while the foreign
        // transaction is still the newest and can be cut.
        guard let foreignBoundaries, !foreignBoundaries.isEmpty else { return }
        try ChangeLog.sealForeignTransaction(db)
    }

    func databaseWillCommitTransaction(_ db: Database, changes: CapturedChanges) throws {
        // A schema change (this transaction's, or another writer's seen at
        // BEGIN) may have left tracked tables with triggers of older columns.
        if triggersCheckedGeneration != db.schema.generation {
            if try !ForeignTracking.refreshOutdated(db).isEmpty { db.refreshSchemaIfChanged() }
            triggersCheckedGeneration = db.schema.generation
        }
        if let triggers {
            // The triggers wrote the changes; the transaction row gets its author now.
            guard let seq = try triggers.openTransaction(db, logTablesGeneration: &logTablesGeneration) else { return }
            lastSequence = seq
            sequenceOfThisTransaction = seq
            // A write to a table the log leaves out: no number, so that other connections read those tables again.
            try db.execute(sql: "UPDATE sluice_transaction SET author = ?, commit_number = ? WHERE seq = ?",
                           arguments: [db.transactionAuthor.map { .text($0) } ?? .null, changes.touchesUnloggedTable ? .null : commitNumber(), .integer(seq)])
        } else if !changes.entries.isEmpty {
            try flush(changes, db)
        }
    }

    func statementWillRun(_ notes: StatementNotes) {
        triggers?.statementWillRun(notes)
    }

    func databaseDidCommit(_ db: Database, changes: [CapturedChanges]) {
        triggers?.transactionEnded()
        refreshByReferenceTables(db)
    }

    func databaseDidRollback() {
        triggers?.transactionEnded()
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

    private func flush(_ changes: CapturedChanges, _ db: Database) throws {
        if logTablesGeneration != db.schema.generation {
            try ChangeLog.create(db)    // dropped by someone since, or never made
            logTablesGeneration = db.schema.generation
        }
        let captured = changes.entries
        let shapes = changes.shapes.map(LoggedTable.init)
        var writes: [Write] = []
        writes.reserveCapacity(captured.count)
        var tables: [String: LoggedTable] = [:]
        var index = captured.startIndex
        while index < captured.endIndex {
            let entry = captured[index]
            if changes.touchesUnloggedTable, OwnTables.isUnlogged(entry.table) {
                index += 1
                continue
            }
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
        try db.execute(sql: "INSERT INTO sluice_transaction (at, author, first_change, commit_number) VALUES (?, ?, \(ChangeLog.nextChangeID), ?)",
                       arguments: [.integer(Self.now()), db.transactionAuthor.map { .text($0) } ?? .null, changes.touchesUnloggedTable ? .null : commitNumber()])
        let seq = db.lastInsertedRowID
        lastSequence = seq
        sequenceOfThisTransaction = seq
        let statement = try db.cachedStatement(sql: """
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
                let copy = try db.cachedStatement(sql: """
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

    /// The number this transaction's commit gets, NULL when the counter cannot be read.
    private func commitNumber() -> SQLiteValue {
        counter.read().map { .integer(Int64($0 &+ 1)) } ?? .null
    }

    static func now() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded())
    }

}

// The log writer belongs to the writer's queue.
@available(*, unavailable)
extension LogWriter: Sendable {}
