import Foundation
import SluiceSyncProtocol
import Sluice

/// Partial sync on the device: a round of rows (``RowsResponse`` pages) applied as one
/// local transaction, then the rows no subscription keeps removed, in the same transaction
/// (so live queries see rows enter and leave as one ordinary changeset).
extension SyncEngine {
    /// Applies a round's rows (the last word on each row counts), parents before children,
    /// removes what left, and moves the cursor to `head`. Returns whether merge results
    /// were recorded (written by ``writeMerges(_:)``).
    ///
    /// A `complete` round (pulled from 0: the first, or after the subscriptions changed)
    /// holds every row the device keeps: the rows here it does not name go too (deleted on
    /// the service meanwhile, or left).
    @discardableResult
    func applyRows(_ changes: [SyncChange], head: Int64, complete: Bool, subscriptions: [SyncSubscription], _ db: Database) throws -> Bool {
        guard var round = try beginRows(receiving: changes, complete: complete, subscriptions: subscriptions, db) else { return false }
        try applyRows(changes, to: &round, db)
        return try finishRows(round, head: head, db)
    }

    /// A round of rows being applied in one local transaction, a page at a time
    /// (``beginRows(receiving:complete:subscriptions:_:)``, ``applyRows(_:to:_:)``, then
    /// ``finishRows(_:head:_:)``).
    struct RowsRound {
        var context: PullContext
        let complete: Bool
        let subscriptions: [SyncSubscription]
        /// The rows, by table, whose last word so far is an insert (a complete round
        /// removes the others here).
        var named: [String: Set<String>] = [:]
        /// The newest column clock of the rows so far.
        var newest: Int64?
        /// The last identity the device had before the round (nil: none). Only a row named
        /// before the round can be one the round leaves out: each it names is applied.
        var identitiesBefore: Int64?
    }

    /// Starts applying a round; nil when the device has no state yet. The clocks of
    /// `receiving` (the round's rows when they are all here) are taken before this device's
    /// unpushed changes are read and stamped, as when a history is applied; a round applied
    /// page by page takes them at its end, and is applied so only with nothing unpushed
    /// (``streamsRows(_:)``).
    func beginRows(receiving changes: [SyncChange], complete: Bool, subscriptions: [SyncSubscription], _ db: Database) throws -> RowsRound? {
        guard var state = try loadState(db) else { return nil }
        let loaded = state
        db.transactionAuthor = Self.syncAuthor
        let newest = Self.newestClock(changes)
        if let newest { state.clock = state.clock.receiving(HybridClock(rawValue: newest)) }
        // Every synced table whole (a snapshot): the round removes no row for being outside it.
        let whole = Set(try subscriptions.filter { try $0.localFilter() == nil }.map { $0.table.lowercased() })
        let context = try beginPull(state, loaded: loaded, keepsEveryRow: order.allSatisfy(whole.contains), db)
        return RowsRound(context: context, complete: complete, subscriptions: subscriptions, newest: newest,
                         identitiesBefore: complete ? try IdentityMap(db).last() : nil)
    }

    /// Whether a round may be applied page by page as it arrives: this device has a state
    /// and nothing unpushed (whose stamps and conflicts wait for every pulled clock).
    func streamsRows(_ db: Database) throws -> Bool {
        guard let state = try loadState(db) else { return false }
        return try !hasLocalTransactions(after: state.pushedToken, db)
    }

    /// Applies one page of a round (the last word on each row in it counts): rows created
    /// or changed, parents first (their references resolve), then rows deleted or leaving,
    /// children first. A row a later page names again is settled again.
    func applyRows(_ changes: [SyncChange], to round: inout RowsRound, _ db: Database) throws {
        var latest: [String: SyncChange] = [:]
        var keys: [String] = []
        for change in changes {
            let key = change.table.lowercased() + "\u{0}" + change.id
            if latest.updateValue(change, forKey: key) == nil { keys.append(key) }
        }
        let rows = keys.compactMap { latest[$0] }
        if let newest = Self.newestClock(rows) { round.newest = max(round.newest ?? newest, newest) }
        let position = Dictionary(order.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        func rank(_ change: SyncChange) -> Int { position[change.table.lowercased()] ?? .max }
        for change in rows.enumerated().filter({ $0.element.op == .insert }).sorted(by: { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }) {
            try upsert(change.element, &round.context, db)
        }
        for change in rows.enumerated().filter({ $0.element.op != .insert }).sorted(by: { (rank($0.element), $0.offset) > (rank($1.element), $1.offset) }) {
            let change = change.element
            let table = try syncedTable(change.table)
            guard let local = try localID(table.name.lowercased(), change.id, db) else { continue }
            switch change.op {
            case .delete:
                try deleteRow(table, local, gid: change.id, by: ConflictResolver.Remote(clock: HybridClock(rawValue: change.clocks?.values.max() ?? 0), device: ""), &round.context, db)
            case .leave:
                guard round.context.pending[RowKey(table: table.name.lowercased(), rowID: local)] == nil else { continue }
                try db.execute(sql: "DELETE FROM \(quoteIdentifier(table.name)) WHERE rowid = ?", arguments: [.integer(local)])
                try forget(table.name.lowercased(), local, db)
            case .insert, .update:
                continue
            }
        }
        try forgetDeleted(rows, pending: round.context.pending, db)
        // Only a device that named rows before the round may have some the round leaves out.
        guard round.complete, round.identitiesBefore != nil else { return }
        for change in rows {
            if change.op == .insert {
                round.named[change.table.lowercased(), default: []].insert(change.id)
            } else {
                round.named[change.table.lowercased()]?.remove(change.id)
            }
        }
    }

    /// Ends a round: a complete one removes the rows here it did not name; the rows no
    /// subscription keeps go; the cursor moves to `head`. Returns whether merge results
    /// were recorded (written by ``writeMerges(_:)``).
    func finishRows(_ round: RowsRound, head: Int64, _ db: Database) throws -> Bool {
        var context = round.context
        context.state.cursor = head
        if let newest = round.newest { context.state.clock = context.state.clock.receiving(HybridClock(rawValue: newest)) }
        if round.complete, let before = round.identitiesBefore {
            // Before its first upload is over, a device's own rows may not be on the service yet.
            let uploaded = try hasPushedBefore(db)
            for name in order.reversed() {
                guard let table = tables[name] else { continue }
                for (local, gid) in try IdentityMap(db).rows(of: name, includingMadeHere: uploaded, through: before) {
                    guard !(round.named[name]?.contains(gid) ?? false),
                          context.pending[RowKey(table: name, rowID: local)] == nil, try currentRow(table, local, db) != nil else { continue }
                    try db.execute(sql: "DELETE FROM \(quoteIdentifier(table.name)) WHERE rowid = ?", arguments: [.integer(local)])
                    try forget(name, local, db)
                }
            }
        }
        try removeUnsubscribed(round.subscriptions, pending: context.pending, db)
        return try finishPull(context, db)
    }

    /// The newest column clock among `changes`.
    private static func newestClock(_ changes: [SyncChange]) -> Int64? {
        changes.compactMap { $0.clocks?.values.max() }.max()
    }

    /// The synced table a subset's row belongs to.
    private func syncedTable(_ name: String) throws -> LocalTable {
        guard let table = tables[name.lowercased()] else {
            throw StoreError(code: .invalidInput, message: """
                sync: the subscriptions bring rows of '\(name)' (a table their rows point at), which this device does not sync: add it to the synced tables
                """)
        }
        return table
    }

    /// A row's current values: created here, or the columns that differ updated, each
    /// settled against an unpushed value here by the column's policy (with the clock the
    /// service has for that column).
    private func upsert(_ change: SyncChange, _ context: inout PullContext, _ db: Database) throws {
        let table = try syncedTable(change.table)
        let name = table.name.lowercased()
        if context.retired, try deletedHere(table, gid: change.id, db) { return }
        // Every parent comes with its rows, so a parent missing here is one this device
        // deleted (not pushed yet): as with a pulled history, the row goes too, everywhere,
        // as the parent's cascade takes it on every device (a nullable reference is cleared).
        guard let values = try localValues(change.values ?? [:], table, gid: change.id, db) else {
            try fixUp(name, change.id, column: nil, db)
            return
        }
        let local = try localID(name, change.id, db)
        if let local, let current = try currentRow(table, local, db) {
            let key = RowKey(table: name, rowID: local)
            // Only the columns that differ; and where the service's value is the one this
            // device changed from, its own stays.
            let changed = values.filter { column, remote in
                current[column] != remote && context.pending[key]?.columns[column.lowercased()]?.base != remote
            }
            // A row's current values name no writer per column: only each column's clock.
            let clocks = Dictionary(change.clocks?.map { ($0.key.lowercased(), $0.value) } ?? [], uniquingKeysWith: { first, _ in first })
            let applied = try settleColumns(changed, of: table, key: key, clock: { HybridClock(rawValue: clocks[$0.lowercased()] ?? 0) },
                                            device: "", &context, db)
            try update(table, local, applied, db)
            return
        }
        if let local, let deleted = context.pending[RowKey(table: name, rowID: local)]?.deleted {
            // Deleted here, unpushed: back only when updates win and the service changed it since.
            guard values.contains(where: { deleted[$0.0] != $0.1 }) else { return }
            let clocks = change.clocks?.values.max().map(HybridClock.init(rawValue:)) ?? .zero
            let writer = ConflictResolver.Remote(clock: clocks, device: "")
            guard context.resolver.resolveUpdateOfRowDeletedHere() == .kept else {
                // The delete here stands: the service's values are what was lost.
                try recordRow(.editLostToDelete, table: table, rowID: local, gid: change.id, values: Row(columns: values.map(\.0), values: values.map(\.1)),
                              deletedHere: true, remote: writer, context, db)
                return
            }
            try recordRow(.deleteLostToEdit, table: table, rowID: local, gid: change.id, values: nil, deletedHere: true, remote: writer, context, db)
            context.pending[RowKey(table: name, rowID: local)] = nil
        }
        try insert(table, local: try newRowID(local, table, reserved: &context.reserved, db), values, gid: change.id, db)
    }

    /// Removes the rows of the synced tables that no subscription keeps and no row here
    /// points at, children first; rows with unpushed changes stay (their push goes first).
    func removeUnsubscribed(_ subscriptions: [SyncSubscription], pending: [RowKey: PendingRow], _ db: Database) throws {
        var filters: [String: Filter?] = [:]
        for subscription in subscriptions { filters[subscription.table.lowercased()] = try subscription.localFilter() }
        for name in order.reversed() {
            guard let table = tables[name] else { continue }
            if let entry = filters[name], entry == nil { continue }
            var keep = Set(try filters[name]?.map { try db.rowIDs(table: table.name, filter: $0) } ?? [])
            for child in tables.values {
                for (column, target) in child.references where target == name {
                    guard let column = child.info.column(named: column)?.name else { continue }
                    for row in try db.fetchRows(sql: "SELECT DISTINCT \(quoteIdentifier(column)) FROM \(quoteIdentifier(child.name)) WHERE \(quoteIdentifier(column)) IS NOT NULL") {
                        if case .integer(let rowID) = row[0] { keep.insert(rowID) }
                    }
                }
            }
            let gone = try db.rowIDs(table: table.name).filter { !keep.contains($0) && pending[RowKey(table: name, rowID: $0)] == nil }
            for rowID in gone {
                try db.execute(sql: "DELETE FROM \(quoteIdentifier(table.name)) WHERE rowid = ?", arguments: [.integer(rowID)])
                try forget(name, rowID, db)
            }
        }
    }
}

extension SyncEngine {
    /// Refuses subscriptions to tables this device does not sync, twice to one table, or
    /// with a filter that does not parse.
    func check(_ subscriptions: [SyncSubscription]?) throws {
        var seen: Set<String> = []
        for subscription in subscriptions ?? [] {
            let name = subscription.table.lowercased()
            guard configuration.tables.contains(where: { $0.lowercased() == name }) else {
                throw StoreError(code: .invalidInput, message: "sync: a subscription to '\(subscription.table)', which is not among the synced tables")
            }
            guard seen.insert(name).inserted else {
                throw StoreError(code: .invalidInput, message: "sync: two subscriptions to '\(subscription.table)': join their filters with OR")
            }
            _ = try subscription.localFilter()
        }
    }

    /// The subscriptions as the state records them (sorted-key JSON).
    static func subscriptionKey(_ subscriptions: [SyncSubscription]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(subscriptions), as: UTF8.self)
    }

    /// The subscriptions the rows here were pulled for (nil: none, the whole history).
    func appliedSubscriptions(_ db: Database) throws -> String? {
        let table = DeviceStateTable(db)
        guard try table.exists(), case .text(let key)? = try table.value(.subscriptions) else { return nil }
        return key
    }

    func saveAppliedSubscriptions(_ key: String?, _ db: Database) throws {
        let table = DeviceStateTable(db)
        if let key { try table.set(.subscriptions, .text(key)) } else { try table.remove(.subscriptions) }
    }

    /// Whether this device started from a snapshot (after which a cursor of 0 means the
    /// space was empty, and the history from its start follows).
    func tookSnapshot(_ db: Database) throws -> Bool {
        let table = DeviceStateTable(db)
        return try table.exists() && table.contains(.snapshot)
    }

    func recordSnapshot(_ taken: Bool, _ db: Database) throws {
        let table = DeviceStateTable(db)
        if taken { try table.setIfMissing(.snapshot, .integer(1)) } else { try table.remove(.snapshot) }
    }
}
