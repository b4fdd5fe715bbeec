import Foundation
import SluiceSyncProtocol
import Sluice

/// The device side of sync, as transactions on the store: the device's sync state, the
/// global ids of its rows, what it has not pushed yet, and applying what it pulls. Every
/// step that changes state is one SQLite transaction, so a process killed at any point
/// resumes where the last commit left it: nothing is applied twice or lost.
///
/// Its state lives in the `sluice_sync_*` tables (Sluice's own, never logged), made by
/// ``SyncStateFormat``'s migrations, each table read and written by one small type in
/// `State/`: ``DeviceStateTable`` (id, cursor, clocks, upload progress), ``IdentityMap``
/// (local ↔ global ids), ``StampLedger`` (the clocks of transactions sent),
/// ``RetiredIDs`` (ids a delete ended), ``QuarantineTable``, ``Resurrections``,
/// ``FixUps``, ``MergeResults`` and ``AttachmentLedger``.
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
        /// The latest clock seen (this device's stamps and every pulled one).
        var clock: HybridClock
        var databaseID: String
        /// The latest clock this device stamped a transaction with.
        var stamped: HybridClock = .zero
        /// Where the store's first upload began (nil before it began): read with the state,
        /// written with the upload's progress (`save(_ progress:_:)`).
        var uploadFloor: Int64?

        /// The log's token of `pushed`.
        var pushedToken: HistoryToken { HistoryToken(databaseID: databaseID, sequence: pushed) }

        /// The stamp of a transaction committed at `date`: its commit time, later than
        /// every earlier stamp of this device.
        mutating func stamp(at date: Date) -> HybridClock {
            stamped = stamped.tick(at: date)
            clock = max(clock, stamped)
            return stamped
        }
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
        /// Attachment columns (lowercased).
        var attachments: Set<String> = []
        var name: String { info.name }

        /// Where a column named `name` (as a device sends it) sits in the table: its index,
        /// or past the end for a name this device does not know (reported by the caller).
        func position(_ name: String) -> Int {
            if let index = info.columns.firstIndex(where: { $0.name == name }) { return index }
            return info.column(named: name).flatMap { column in info.columns.firstIndex(of: column) } ?? info.columns.count
        }
    }

    /// An unpushed local column value.
    typealias PendingValue = ConflictResolver.Local

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

    /// Creates the device's state (a new device id) in the sync tables (``SyncStateFormat``
    /// makes them), reads the synced tables' schema, and registers the history consumer. A
    /// store whose file is not the one its state was recorded in (`file`, from
    /// ``FileIdentity``) is a copy: it takes a new device id, so that both copies' later
    /// edits are pushed.
    func prepare(_ db: Database, file: String? = nil) throws -> State {
        try loadTables(db)
        let identity = file.flatMap(FileIdentity.of)
        if var state = try loadState(db) {
            guard let identity else { return state }
            let recorded = try DeviceStateTable(db).value(.file)
            if case .text(let recorded)? = recorded, recorded != identity { try reidentify(&state, db) }
            if recorded != .text(identity) { try saveFile(identity, db) }
            return state
        }
        let token = try db.currentHistoryToken()
        let state = State(device: Self.newDeviceID(), cursor: 0, pushed: 0, clock: .zero, databaseID: token.databaseID)
        try save(state, db)
        if let identity { try saveFile(identity, db) }
        try db.acknowledgeHistory(HistoryToken(databaseID: token.databaseID, sequence: 0), for: Self.consumer)
        return state
    }

    static func newDeviceID() -> String { RandomID.make() }

    private func saveFile(_ identity: String, _ db: Database) throws {
        try DeviceStateTable(db).set(.file, .text(identity))
    }

    func loadTables(_ db: Database) throws {
        let infos = try configuration.tables.map { try db.tableInfo($0) }
        let synced = Set(infos.map { $0.name.lowercased() })
        let attachments = try attachmentColumns(infos)
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
                                                       references: SyncSchema.references(of: info, synced: synced), attachments: attachments[info.name.lowercased()] ?? [])
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
        let table = DeviceStateTable(db)
        guard try table.exists() else { return nil }
        let values = try table.values()
        guard case .text(let device)? = values[.device], case .text(let databaseID)? = values[.database] else { return nil }
        func integer(_ key: DeviceStateTable.Key) -> Int64 { if case .integer(let value)? = values[key] { return value } else { return 0 } }
        var uploadFloor: Int64? { if case .integer(let value)? = values[.uploadFloor] { value } else { nil } }
        return State(device: device, cursor: integer(.cursor), pushed: integer(.pushed), clock: HybridClock(rawValue: integer(.clock)),
                     databaseID: databaseID, stamped: HybridClock(rawValue: integer(.stamped)), uploadFloor: uploadFloor)
    }

    /// Writes the state; with `loaded` (what was read in this transaction), only what differs.
    func save(_ state: State, _ db: Database, loaded: State? = nil) throws {
        func pairs(_ state: State) -> [(DeviceStateTable.Key, SQLiteValue)] {
            [(.device, .text(state.device)), (.database, .text(state.databaseID)), (.cursor, .integer(state.cursor)),
             (.pushed, .integer(state.pushed)), (.clock, .integer(state.clock.rawValue)), (.stamped, .integer(state.stamped.rawValue))]
        }
        let before = loaded.map(pairs)
        let table = DeviceStateTable(db)
        for (index, (key, value)) in pairs(state).enumerated() where before?[index].1 != value {
            try table.set(key, value)
        }
    }

    /// When a sync last completed (saved by ``syncCompleted(_:)``).
    func lastSync(_ db: Database) throws -> Date? {
        let table = DeviceStateTable(db)
        guard try table.exists(), case .integer(let milliseconds)? = try table.value(.lastSync) else { return nil }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    func syncCompleted(_ db: Database) throws {
        try DeviceStateTable(db).set(.lastSync, .integer(Int64(Date().timeIntervalSince1970 * 1000)))
    }

    // MARK: - Global ids

    // The identity map's lookups as the engine's steps use them (``IdentityMap`` owns the table).

    func globalID(_ table: String, _ local: Int64, _ db: Database) throws -> String? {
        try IdentityMap(db).globalID(table, local)
    }

    func globalIDCreating(_ table: String, _ local: Int64, _ db: Database) throws -> String {
        try IdentityMap(db).globalIDCreating(table, local)
    }

    func localID(_ table: String, _ gid: String, _ db: Database) throws -> Int64? {
        try IdentityMap(db).localID(table, gid)
    }

    // MARK: - What the device has not pushed

    /// The local transactions after the last push, with the parts that later pulled
    /// changes overwrote left out (a pulled delete or insert of a row drops the row's
    /// earlier local changes; a pulled update drops the columns it wrote).
    ///
    /// `local`: what ``hasLocalTransactions(after:_:)`` answered for `state.pushedToken` in
    /// this transaction, when the caller asked already.
    func unpushed(_ state: State, local: Bool? = nil, _ db: Database) throws -> [(LoggedTransaction, [LocalChange])] {
        // Pulled transactions alone since the last push (the usual case while a device
        // follows): nothing to read. Without this, every pulled transaction re-read the
        // whole history pulled since the last push.
        guard try local ?? hasLocalTransactions(after: state.pushedToken, db) else { return [] }
        let names = order.compactMap { tables[$0]?.name }
        // A write (push, pull) closes a foreign writer's newest transaction first; a read (a count) takes it as it is.
        let token = HistoryToken(databaseID: state.databaseID, sequence: state.pushed)
        let transactions = try db.loggedTransactions(after: token, tables: names, includingOpen: true)
        // Up to the first upload's floor, the upload sent every row made here as it was:
        // only changes of rows that came from the service are left to push.
        let uploadFloor = state.uploadFloor.flatMap { $0 > state.pushed ? $0 : nil } ?? .min
        let identities = IdentityMap(db)
        var rowsOverwritten: Set<RowKey> = []
        // Columns a later pulled transaction wrote, with the last value it wrote.
        var columnsOverwritten: [RowKey: [String: SQLiteValue]] = [:]
        var result: [(LoggedTransaction, [LocalChange])] = []
        for transaction in transactions.reversed() {
            let pulled = transaction.author == Self.syncAuthor
            var kept: [LocalChange] = []
            for change in transaction.changes.reversed() {
                let key = RowKey(table: change.table.lowercased(), rowID: change.rowID)
                if pulled {
                    switch change.operation {
                    case .insert, .delete: rowsOverwritten.insert(key)
                    case .update:
                        for column in change.changedColumns where columnsOverwritten[key]?[column.lowercased()] == nil {
                            columnsOverwritten[key, default: [:]][column.lowercased()] = change.new?[column] ?? .null
                        }
                    }
                    continue
                }
                if rowsOverwritten.contains(key) { continue }
                if transaction.token.sequence <= uploadFloor, try !identities.isPulled(key.table, change.rowID) { continue }
                if change.operation == .insert, let overwritten = columnsOverwritten[key], let new = change.new {
                    // Inserted here, then changed by a pulled transaction (another device's
                    // update, or this device's own ON DELETE action applying a pulled delete):
                    // the insert carries the value that transaction left.
                    var part = LocalChange(change)
                    part.new = Row(columns: new.columns, values: zip(new.columns, new.values).map { overwritten[$0.lowercased()] ?? $1 })
                    kept.append(part)
                    continue
                }
                if change.operation == .update, let overwritten = columnsOverwritten[key], let new = change.new {
                    let keep = new.columns.indices.filter { overwritten[new.columns[$0].lowercased()] == nil }
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

    /// Whether the log has a transaction after `token` that was not written by applying a
    /// pulled one (an app's, a foreign writer's, a merge result) and changed a synced table.
    ///
    /// One that changed no synced table (a migration, the app's own unsynced tables) has
    /// nothing to push. Counting it kept `pushed` from moving while a device pulled, so each
    /// pulled transaction re-read every one pulled before it, which is quadratic: the initial
    /// sync of 100,000 people (ten 10,000-row parts, the new device's migration the only
    /// local transaction) took 5.3–6.6 s with it and 3.9–4.3 s without.
    func hasLocalTransactions(after token: HistoryToken, _ db: Database) throws -> Bool {
        try db.hasLoggedTransactions(after: token, touching: order.compactMap { tables[$0]?.name }, notBy: Self.syncAuthor)
    }

    private static func subset(_ row: Row, _ columns: [String]) -> Row {
        Row(columns: columns, values: columns.map { row[$0] ?? .null })
    }

    /// The clock of each unpushed transaction: the time it was committed (later than the
    /// device's earlier stamps), recorded the first time sync sees it. Not the time sync
    /// sees it, nor later than clocks pulled since: an edit made offline an hour ago loses
    /// to another device's edit of the same column made since ("last writer wins", not
    /// "last to sync wins").
    func stamp(_ transactions: [(LoggedTransaction, [LocalChange])], state: inout State, _ db: Database) throws -> [Int64: HybridClock] {
        var stamps: [Int64: HybridClock] = [:]
        guard !transactions.isEmpty else { return stamps }
        let ledger = StampLedger(db)
        stamps = try ledger.clocks(after: state.pushed)
        for (transaction, _) in transactions where stamps[transaction.token.sequence] == nil {
            let clock = state.stamp(at: transaction.date)
            stamps[transaction.token.sequence] = clock
            try ledger.record(transaction.token.sequence, clock)
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


}
