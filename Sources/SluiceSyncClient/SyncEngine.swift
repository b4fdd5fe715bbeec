import Foundation
import SluiceSyncProtocol
import Store

/// The device side of sync, as transactions on the store: the device's sync state, the
/// global ids of its rows, what it has not pushed yet, and applying what it pulls. Every
/// step that changes state is one SQLite transaction, so a process killed at any point
/// resumes where the last commit left it: nothing is applied twice or lost.
///
/// Tables (Sluice's own, never logged):
/// - `sluice_sync_state`: device id, pull cursor, the last log sequence pushed, the clock.
/// - `sluice_sync_id`: `(table, local id) ↔ global id`, one logical row per local id.
/// - `sluice_sync_stamp`: the clock of each unpushed local transaction.
/// - `sluice_sync_resurrect`: rows whose pending update beat a pulled delete.
// @unchecked Sendable: `tables` and `order` are set once, by `prepare` in the client's
// initializer, before the engine is shared; every other call only reads them, and each
// step runs inside one store transaction.
final class SyncEngine: @unchecked Sendable {
    /// The author of transactions that apply pulled changes (never pushed again).
    static let syncAuthor = "sync"
    /// The author of the transactions that write merge results (pushed).
    static let mergeAuthor = "sync-merge"
    static let consumer = "sluice-sync"

    struct State: Sendable {
        var device: String
        var cursor: Int64
        var pushed: Int64
        var clock: HybridClock
        var databaseID: String
    }

    /// A local row change still to push (a logged change, or the part of one that pulled
    /// changes did not overwrite).
    struct LocalChange {
        var table: String
        var operation: RowChange.Operation
        var rowID: Int64
        var oldRowID: Int64?
        var old: Row?
        var new: Row?

        init(_ change: RowChange) {
            table = change.table
            operation = change.operation
            rowID = change.rowID
            oldRowID = change.oldRowID
            old = change.old
            new = change.new
        }
    }

    struct RowKey: Hashable {
        var table: String
        var rowID: Int64
    }

    /// A synced table as this device has it.
    struct LocalTable: Sendable {
        var info: TableInfo
        /// The INTEGER PRIMARY KEY column, if the table has one (else rows are named by rowid).
        var keyColumn: String?
        /// Foreign key columns (lowercased) → the synced table they point at.
        var references: [String: String]
        var name: String { info.name }
    }

    /// An unpushed local column value.
    struct PendingValue {
        var clock: HybridClock
        var value: SQLiteValue
        var base: SQLiteValue?
    }

    struct PendingRow {
        var columns: [String: PendingValue] = [:]
        /// The row's values when the device deleted it (unpushed).
        var deleted: Row?
    }

    let configuration: SyncConfiguration
    private(set) var tables: [String: LocalTable] = [:]
    /// Synced tables, parents before children.
    private(set) var order: [String] = []

    init(configuration: SyncConfiguration) {
        self.configuration = configuration
    }

    // MARK: - Set-up

    /// Creates the sync tables and the device's state (a new device id), reads the synced
    /// tables' schema, and registers the history consumer.
    func prepare(_ db: Database) throws -> State {
        try db.execute(script: """
            CREATE TABLE IF NOT EXISTS sluice_sync_state (key TEXT PRIMARY KEY, value);
            CREATE TABLE IF NOT EXISTS sluice_sync_id (tbl TEXT NOT NULL, local INTEGER NOT NULL, gid TEXT NOT NULL,
                pulled INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (tbl, local), UNIQUE (tbl, gid));
            CREATE TABLE IF NOT EXISTS sluice_sync_stamp (seq INTEGER PRIMARY KEY, clock INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS sluice_sync_resurrect (tbl TEXT NOT NULL, local INTEGER NOT NULL, PRIMARY KEY (tbl, local));
            """)
        try loadTables(db)
        if let state = try loadState(db) { return state }
        let token = try db.currentHistoryToken()
        let state = State(device: UUID().uuidString.lowercased(), cursor: 0, pushed: 0, clock: .zero, databaseID: token.databaseID)
        try save(state, db)
        try db.execute(sql: "INSERT INTO sluice_consumer (name, acknowledged, at) VALUES (?, 0, 0) ON CONFLICT (name) DO NOTHING",
                       arguments: [.text(Self.consumer)])
        return state
    }

    private func loadTables(_ db: Database) throws {
        let infos = try configuration.tables.map { try db.tableInfo($0) }
        let synced = Set(infos.map { $0.name.lowercased() })
        var found: [String: LocalTable] = [:]
        for info in infos {
            guard info.kind == .table else {
                throw StoreError(code: .unsupportedTable, message: "sync: \(info.name) is not a rowid table")
            }
            let keyColumn = info.hasIntegerPrimaryKey ? info.primaryKey.first : nil
            guard keyColumn != nil || info.primaryKey == ["rowid"] else {
                throw StoreError(code: .unsupportedTable, message: "sync: \(info.name) has a primary key that is not an INTEGER PRIMARY KEY")
            }
            found[info.name.lowercased()] = LocalTable(info: info, keyColumn: keyColumn,
                                                       references: SyncSchema.references(of: info, synced: synced))
        }
        tables = found
        // Parents before children, so that a transaction replayed in this order resolves
        // every reference (the initial upload, and rows pulled in one transaction).
        var ordered: [String] = []
        var visiting: Set<String> = []
        func visit(_ name: String) {
            guard !ordered.contains(name), !visiting.contains(name), let table = found[name] else { return }
            visiting.insert(name)
            for parent in table.references.values where parent != name { visit(parent) }
            ordered.append(name)
        }
        for name in configuration.tables.map({ $0.lowercased() }) { visit(name) }
        order = ordered
    }

    func loadState(_ db: Database) throws -> State? {
        var values: [String: SQLiteValue] = [:]
        for row in try db.fetchRows(sql: "SELECT key, value FROM sluice_sync_state") {
            if case .text(let key)? = row["key"] { values[key] = row["value"] }
        }
        guard case .text(let device)? = values["device"], case .text(let databaseID)? = values["database"] else { return nil }
        func integer(_ key: String) -> Int64 { if case .integer(let value)? = values[key] { return value } else { return 0 } }
        return State(device: device, cursor: integer("cursor"), pushed: integer("pushed"),
                     clock: HybridClock(rawValue: integer("clock")), databaseID: databaseID)
    }

    func save(_ state: State, _ db: Database) throws {
        let pairs: [(String, SQLiteValue)] = [
            ("device", .text(state.device)), ("database", .text(state.databaseID)), ("cursor", .integer(state.cursor)),
            ("pushed", .integer(state.pushed)), ("clock", .integer(state.clock.rawValue)),
        ]
        for (key, value) in pairs {
            try db.execute(sql: "INSERT INTO sluice_sync_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                           arguments: [.text(key), value])
        }
    }

    // MARK: - Global ids

    func globalID(_ table: String, _ local: Int64, _ db: Database) throws -> String? {
        let rows = try db.fetchRows(sql: "SELECT gid FROM sluice_sync_id WHERE tbl = ? AND local = ?", arguments: [.text(table), .integer(local)])
        if case .text(let gid)? = rows.first?["gid"] { return gid }
        return nil
    }

    func globalIDCreating(_ table: String, _ local: Int64, _ db: Database) throws -> String {
        if let gid = try globalID(table, local, db) { return gid }
        let gid = UUID().uuidString.lowercased()
        try db.execute(sql: "INSERT INTO sluice_sync_id (tbl, local, gid) VALUES (?, ?, ?)", arguments: [.text(table), .integer(local), .text(gid)])
        return gid
    }

    func localID(_ table: String, _ gid: String, _ db: Database) throws -> Int64? {
        let rows = try db.fetchRows(sql: "SELECT local FROM sluice_sync_id WHERE tbl = ? AND gid = ?", arguments: [.text(table), .text(gid)])
        if case .integer(let local)? = rows.first?["local"] { return local }
        return nil
    }

    private func map(_ table: String, local: Int64, to gid: String, pulled: Bool, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM sluice_sync_id WHERE tbl = ? AND (local = ? OR gid = ?)", arguments: [.text(table), .integer(local), .text(gid)])
        try db.execute(sql: "INSERT INTO sluice_sync_id (tbl, local, gid, pulled) VALUES (?, ?, ?, ?)",
                       arguments: [.text(table), .integer(local), .text(gid), .integer(pulled ? 1 : 0)])
    }

    // MARK: - What the device has not pushed

    /// The local transactions after the last push, with the parts that later pulled
    /// changes overwrote left out (a pulled delete or insert of a row drops the row's
    /// earlier local changes; a pulled update drops the columns it wrote).
    func unpushed(_ state: State, _ db: Database) throws -> [(LoggedTransaction, [LocalChange])] {
        let names = order.compactMap { tables[$0]?.name }
        let transactions = try db.loggedTransactions(after: HistoryToken(databaseID: state.databaseID, sequence: state.pushed), tables: names)
        var rowsOverwritten: Set<RowKey> = []
        var columnsOverwritten: [RowKey: Set<String>] = [:]
        var result: [(LoggedTransaction, [LocalChange])] = []
        for transaction in transactions.reversed() {
            let pulled = transaction.author == Self.syncAuthor
            var kept: [LocalChange] = []
            for change in transaction.changes.reversed() {
                let key = RowKey(table: change.table.lowercased(), rowID: change.rowID)
                if pulled {
                    switch change.operation {
                    case .insert, .delete: rowsOverwritten.insert(key)
                    case .update: columnsOverwritten[key, default: []].formUnion(change.changedColumns.map { $0.lowercased() })
                    }
                    continue
                }
                if rowsOverwritten.contains(key) { continue }
                if change.operation == .update, let overwritten = columnsOverwritten[key], let new = change.new {
                    let keep = new.columns.indices.filter { !overwritten.contains(new.columns[$0].lowercased()) }
                    guard !keep.isEmpty else { continue }
                    if keep.count < new.columns.count {
                        var part = LocalChange(change)
                        part.old = change.old.map { Self.subset($0, keep.map { new.columns[$0] }) }
                        part.new = Self.subset(new, keep.map { new.columns[$0] })
                        kept.append(part)
                        continue
                    }
                }
                kept.append(LocalChange(change))
            }
            if !pulled, !kept.isEmpty { result.append((transaction, kept.reversed())) }
        }
        return result.reversed()
    }

    private static func subset(_ row: Row, _ columns: [String]) -> Row {
        Row(columns: columns, values: columns.map { row[$0] ?? .null })
    }

    /// The clock of each unpushed transaction, stamped the first time sync sees it.
    func stamp(_ transactions: [(LoggedTransaction, [LocalChange])], state: inout State, _ db: Database) throws -> [Int64: HybridClock] {
        var stamps: [Int64: HybridClock] = [:]
        for row in try db.fetchRows(sql: "SELECT seq, clock FROM sluice_sync_stamp WHERE seq > ?", arguments: [.integer(state.pushed)]) {
            if case .integer(let seq)? = row["seq"], case .integer(let clock)? = row["clock"] { stamps[seq] = HybridClock(rawValue: clock) }
        }
        for (transaction, _) in transactions where stamps[transaction.token.sequence] == nil {
            state.clock = state.clock.tick(at: transaction.date)
            stamps[transaction.token.sequence] = state.clock
            try db.execute(sql: "INSERT INTO sluice_sync_stamp (seq, clock) VALUES (?, ?)",
                           arguments: [.integer(transaction.token.sequence), .integer(state.clock.rawValue)])
        }
        return stamps
    }

    /// Unpushed values per row, for settling conflicts with pulled changes.
    func pendingRows(_ transactions: [(LoggedTransaction, [LocalChange])], stamps: [Int64: HybridClock]) -> [RowKey: PendingRow] {
        var rows: [RowKey: PendingRow] = [:]
        for (transaction, changes) in transactions {
            let clock = stamps[transaction.token.sequence] ?? .zero
            for change in changes {
                let key = RowKey(table: change.table.lowercased(), rowID: change.rowID)
                var row = rows[key] ?? PendingRow()
                switch change.operation {
                case .delete:
                    row.deleted = change.old
                    row.columns = [:]
                case .insert, .update:
                    row.deleted = nil
                    guard let new = change.new else { break }
                    for (index, column) in new.columns.enumerated() {
                        let name = column.lowercased()
                        let base = row.columns[name]?.base ?? (change.operation == .update ? change.old?[column] : nil)
                        row.columns[name] = PendingValue(clock: clock, value: new.values[index], base: base)
                    }
                }
                rows[key] = row
            }
        }
        return rows
    }

    // MARK: - Push

    /// The push for everything unpushed (nil when there is nothing), with the last local
    /// sequence it covers. Assigns global ids and clocks and saves them before anything
    /// is sent, so that a retried push sends the same transactions.
    func makePush(_ db: Database) throws -> (PushRequest, Int64)? {
        guard var state = try loadState(db) else { return nil }
        var transactions: [SyncTransaction] = []
        var floor = state.pushed
        if try !hasPushedBefore(db) {
            // First push of this store: upload the rows it holds that did not come from the
            // service (the log may not reach back to every row), then push only what the
            // log has after that. Sent again until a push succeeds.
            let token = try db.currentHistoryToken()
            let upload = try initialUpload(db)
            if !upload.isEmpty {
                state.clock = state.clock.tick(at: Date())
                transactions.append(SyncTransaction(device: state.device, local: token.sequence, clock: state.clock, changes: upload))
            }
            floor = max(floor, token.sequence)
        }
        var scan = state
        scan.pushed = floor
        let unpushed = try unpushed(scan, db)
        let stamps = try stamp(unpushed, state: &state, db)
        var resurrect = try resurrections(db)
        for (transaction, changes) in unpushed {
            var out: [SyncChange] = []
            for (table, local) in resurrect {
                guard let row = try currentRow(table, local, db) else { continue }
                out.append(SyncChange(table: table.name, id: try globalIDCreating(table.name.lowercased(), local, db), op: .insert,
                                      values: try syncValues(row, table, db)))
            }
            resurrect = []
            for change in changes {
                guard let table = tables[change.table.lowercased()] else { continue }
                let name = table.name.lowercased()
                switch change.operation {
                case .insert:
                    guard let new = change.new else { continue }
                    out.append(SyncChange(table: table.name, id: try globalIDCreating(name, change.rowID, db), op: .insert,
                                          values: try syncValues(new, table, db)))
                case .update:
                    if let old = change.oldRowID, old != change.rowID, let gid = try globalID(name, old, db) {
                        try map(name, local: change.rowID, to: gid, pulled: false, db)
                    }
                    guard let new = change.new else { continue }
                    let values = try syncValues(new, table, db)
                    guard !values.isEmpty else { continue }
                    out.append(SyncChange(table: table.name, id: try globalIDCreating(name, change.rowID, db), op: .update, values: values))
                case .delete:
                    guard let gid = try globalID(name, change.rowID, db) else { continue }
                    out.append(SyncChange(table: table.name, id: gid, op: .delete))
                }
            }
            if !out.isEmpty {
                transactions.append(SyncTransaction(device: state.device, local: transaction.token.sequence,
                                                    clock: stamps[transaction.token.sequence] ?? state.clock, changes: out))
            }
        }
        try save(state, db)
        let last = max(floor, unpushed.last?.0.token.sequence ?? floor)
        guard !transactions.isEmpty else {
            try pushed(through: last, head: nil, db)
            return nil
        }
        return (PushRequest(device: state.device, base: state.cursor, transactions: transactions), last)
    }

    private func hasPushedBefore(_ db: Database) throws -> Bool {
        try !db.fetchRows(sql: "SELECT 1 FROM sluice_sync_state WHERE key = 'uploaded'").isEmpty
    }

    private func initialUpload(_ db: Database) throws -> [SyncChange] {
        var changes: [SyncChange] = []
        for name in order {
            guard let table = tables[name] else { continue }
            let sql = "SELECT rowid AS sluice_rowid, * FROM \(Self.quote(table.name)) WHERE rowid NOT IN (SELECT local FROM sluice_sync_id WHERE tbl = ? AND pulled) ORDER BY rowid"
            for row in try db.fetchRows(sql: sql, arguments: [.text(name)]) {
                guard case .integer(let local)? = row["sluice_rowid"] else { continue }
                let values = Row(columns: Array(row.columns.dropFirst()), values: Array(row.values.dropFirst()))
                changes.append(SyncChange(table: table.name, id: try globalIDCreating(name, local, db), op: .insert,
                                          values: try syncValues(values, table, db)))
            }
        }
        return changes
    }

    /// Records a successful push: what it covered is no longer pending; `head` is the new
    /// cursor (nothing can come between the push's base and its own transactions).
    func pushed(through last: Int64, head: Int64?, _ db: Database) throws {
        guard var state = try loadState(db) else { return }
        state.pushed = max(state.pushed, last)
        if let head { state.cursor = max(state.cursor, head) }
        try save(state, db)
        try db.execute(sql: "DELETE FROM sluice_sync_stamp WHERE seq <= ?", arguments: [.integer(state.pushed)])
        try db.execute(sql: "DELETE FROM sluice_sync_resurrect")
        try db.execute(sql: "INSERT INTO sluice_sync_state (key, value) VALUES ('uploaded', 1) ON CONFLICT (key) DO NOTHING")
        try db.execute(sql: "UPDATE sluice_consumer SET acknowledged = max(acknowledged, ?), at = ? WHERE name = ?",
                       arguments: [.integer(state.pushed), .integer(Int64(Date().timeIntervalSince1970 * 1000)), .text(Self.consumer)])
    }

    private func resurrections(_ db: Database) throws -> [(LocalTable, Int64)] {
        try db.fetchRows(sql: "SELECT tbl, local FROM sluice_sync_resurrect").compactMap { row in
            guard case .text(let name)? = row["tbl"], case .integer(let local)? = row["local"], let table = tables[name] else { return nil }
            return (table, local)
        }
    }

    private func currentRow(_ table: LocalTable, _ local: Int64, _ db: Database) throws -> Row? {
        guard let row = try db.fetchRows(sql: "SELECT * FROM \(Self.quote(table.name)) WHERE rowid = ?", arguments: [.integer(local)]).first else { return nil }
        return row
    }

    /// Local values → wire values: the key column left out, foreign keys as global ids.
    private func syncValues(_ row: Row, _ table: LocalTable, _ db: Database) throws -> [String: SyncValue] {
        var values: [String: SyncValue] = [:]
        for (index, column) in row.columns.enumerated() {
            let name = column.lowercased()
            if let key = table.keyColumn, key.lowercased() == name { continue }
            let value = row.values[index]
            if let parent = table.references[name], case .integer(let local) = value {
                values[column] = .reference(try globalIDCreating(parent, local, db))
            } else {
                values[column] = Self.syncValue(value)
            }
        }
        return values
    }

    static func syncValue(_ value: SQLiteValue) -> SyncValue {
        switch value {
        case .null: .null
        case .integer(let value): .integer(value)
        case .real(let value): .real(value)
        case .text(let value): .text(value)
        case .blob(let value): .blob(value)
        }
    }

    // MARK: - Pull

    /// Applies one pulled transaction as one local transaction (author `"sync"`), settling
    /// conflicts with unpushed local values; returns merge results to write next.
    func apply(_ transaction: SyncTransaction, _ db: Database) throws -> [(LocalTable, Int64, String, SQLiteValue)] {
        guard var state = try loadState(db), let seq = transaction.seq, seq > state.cursor else { return [] }
        db.transactionAuthor = Self.syncAuthor
        state.cursor = seq
        state.clock = state.clock.receiving(transaction.clock)
        if transaction.device == state.device {
            // Our own push, accepted although we never heard back: no longer pending.
            try save(state, db)
            try pushed(through: transaction.local, head: nil, db)
            return []
        }
        let unpushed = try unpushed(state, db)
        let stamps = try stamp(unpushed, state: &state, db)
        var pending = pendingRows(unpushed, stamps: stamps)
        var merges: [(LocalTable, Int64, String, SQLiteValue)] = []
        for change in transaction.changes {
            guard let table = tables[change.table.lowercased()] else {
                throw StoreError(code: .invalidInput, message: "sync: pulled a change to '\(change.table)', which this device does not sync")
            }
            let name = table.name.lowercased()
            let local = try localID(name, change.id, db)
            switch change.op {
            case .insert:
                guard let values = try localValues(change.values ?? [:], table, db) else { continue }
                if let local, try currentRow(table, local, db) != nil {
                    try update(table, local, values, db)
                } else {
                    try insert(table, local: local, values, gid: change.id, db)
                }
            case .update:
                guard let local else { continue }
                let key = RowKey(table: name, rowID: local)
                guard try currentRow(table, local, db) != nil else {
                    if configuration.deleteRule == .updateWins, let deleted = pending[key]?.deleted,
                       let values = try localValues(change.values ?? [:], table, db) {
                        // The update brings back the row this device deleted.
                        var all = Dictionary(uniqueKeysWithValues: zip(deleted.columns, deleted.values).map { ($0.0, $0.1) })
                        for (column, value) in values { all[column] = value }
                        if let keyColumn = table.keyColumn { all = all.filter { $0.key.lowercased() != keyColumn.lowercased() } }
                        try insert(table, local: local, all.map { ($0.key, $0.value) }, gid: change.id, db)
                        pending[key] = nil
                    }
                    continue
                }
                guard let values = try localValues(change.values ?? [:], table, db) else { continue }
                var applied: [(String, SQLiteValue)] = []
                for (column, remote) in values {
                    guard let mine = pending[key]?.columns[column.lowercased()] else {
                        applied.append((column, remote))
                        continue
                    }
                    switch configuration.policy(table: table.name, column: column) {
                    case .lastWriterWins:
                        if (transaction.clock, transaction.device) > (mine.clock, state.device) {
                            applied.append((column, remote))
                            pending[key]?.columns[column.lowercased()] = nil
                        }
                    case .serverWins:
                        applied.append((column, remote))
                        pending[key]?.columns[column.lowercased()] = nil
                    case .deviceWins:
                        break
                    case .merge(let merge):
                        let merged = merge(MergeConflict(table: table.name, column: column, base: mine.base, local: mine.value, remote: remote))
                        applied.append((column, remote))
                        pending[key]?.columns[column.lowercased()] = nil
                        merges.append((table, local, column, merged))
                    }
                }
                if !applied.isEmpty { try update(table, local, applied, db) }
            case .delete:
                guard let local, try currentRow(table, local, db) != nil else { continue }
                let key = RowKey(table: name, rowID: local)
                if configuration.deleteRule == .updateWins, let row = pending[key], !row.columns.isEmpty {
                    // The unpushed update wins: the row stays, and the next push brings it back everywhere.
                    try db.execute(sql: "INSERT OR IGNORE INTO sluice_sync_resurrect (tbl, local) VALUES (?, ?)", arguments: [.text(name), .integer(local)])
                    continue
                }
                try db.execute(sql: "DELETE FROM \(Self.quote(table.name)) WHERE rowid = ?", arguments: [.integer(local)])
                pending[key] = nil
            }
        }
        try save(state, db)
        return merges
    }

    /// Wire values → local values, checked against this device's schema; nil when a
    /// NOT NULL foreign key points at a row this device does not have (deleted here:
    /// the delete's push removes the row everywhere).
    private func localValues(_ values: [String: SyncValue], _ table: LocalTable, _ db: Database) throws -> [(String, SQLiteValue)]? {
        var result: [(String, SQLiteValue)] = []
        for (name, value) in values {
            guard let column = table.info.column(named: name) else {
                throw StoreError(code: .unknownColumn, message: "sync: pulled a value for \(table.name).\(name), a column this device does not have")
            }
            switch value {
            case .null: result.append((column.name, .null))
            case .integer(let value): result.append((column.name, .integer(value)))
            case .real(let value): result.append((column.name, .real(value)))
            case .text(let value): result.append((column.name, .text(value)))
            case .blob(let value): result.append((column.name, .blob(value)))
            case .reference(let gid):
                guard let parent = table.references[column.name.lowercased()] else {
                    throw StoreError(code: .typeMismatch, message: "sync: pulled a reference for \(table.name).\(column.name), which is not a foreign key here")
                }
                if let local = try localID(parent, gid, db), try tables[parent].map({ try currentRow($0, local, db) != nil }) ?? false {
                    result.append((column.name, .integer(local)))
                } else if column.isNotNull {
                    return nil
                } else {
                    result.append((column.name, .null))
                }
            }
        }
        return result
    }

    private func insert(_ table: LocalTable, local: Int64?, _ values: [(String, SQLiteValue)], gid: String, _ db: Database) throws {
        var columns = values.map { Self.quote($0.0) }
        var arguments = values.map(\.1)
        if let local {
            columns.append(table.keyColumn.map(Self.quote) ?? "rowid")
            arguments.append(.integer(local))
        }
        let placeholders = Array(repeating: "?", count: columns.count).joined(separator: ", ")
        try db.execute(sql: "INSERT INTO \(Self.quote(table.name)) (\(columns.joined(separator: ", "))) VALUES (\(placeholders))", arguments: arguments)
        try map(table.name.lowercased(), local: db.lastInsertedRowID, to: gid, pulled: true, db)
    }

    func update(_ table: LocalTable, _ local: Int64, _ values: [(String, SQLiteValue)], _ db: Database) throws {
        guard !values.isEmpty else { return }
        let assignments = values.map { "\(Self.quote($0.0)) = ?" }.joined(separator: ", ")
        try db.execute(sql: "UPDATE \(Self.quote(table.name)) SET \(assignments) WHERE rowid = ?", arguments: values.map(\.1) + [.integer(local)])
    }

    /// How many local transactions wait to be pushed.
    func pendingCount(_ db: Database) throws -> Int {
        guard let state = try loadState(db) else { return 0 }
        return try unpushed(state, db).count
    }

    // MARK: - SQL text

    /// A double-quoted identifier (names come from this device's schema, never from the wire).
    static func quote(_ name: String) -> String { "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

}
