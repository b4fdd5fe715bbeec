import SluiceSyncProtocol
import Sluice

/// What both appliers of pulled changes share — a pulled history transaction (`apply`) and
/// a round of a subscription's rows (`applyRows`): one context, built once per applied
/// transaction or round, that holds this device's unpushed values to settle against; one
/// way to settle a pulled column (``settle(_:column:remote:key:applied:pending:_:)``, with
/// the resolver's one equal-clock rule); one way to finish.
extension SyncEngine {
    struct PullContext {
        /// The state being moved (cursor, clocks, stamps), and as it was read.
        var state: State
        let loaded: State
        /// Whether this device has logged transactions after its last push.
        let hasLocal: Bool
        /// Whether a delete here waits to be acknowledged (pulled inserts are checked then).
        let retired: Bool
        /// Unpushed values per row, settled against pulled ones as they are applied.
        var pending: [RowKey: PendingRow]
        /// Rowids the unpushed transactions used, which pulled inserts must not take.
        var reserved: [String: Int64]
        let resolver: ConflictResolver
        /// Whether a merge result was recorded (written by ``writeMerges(_:)``).
        var merged = false
        /// The pulled transaction's place in the history (nil for a round of rows), for the
        /// conflict inbox's records.
        var seq: Int64?
    }

    /// Reads what this device has not pushed, as of `state` (whose cursor and clock the
    /// caller moved for what it applies), and gives the unpushed rows their ids.
    ///
    /// `keepsEveryRow`: the pull removes no row for being outside a subscription (a history
    /// transaction, a snapshot). Such a pull into a store whose rows have never met the
    /// service's (it has not begun its first upload, and no row has a global id) has nothing to
    /// settle: no pulled change can name a row made here, and the upload will send those rows
    /// as they then are. Their changes are not read then (a store of 100,000 rows, or of one
    /// 64 MB attachment, read and decoded its whole log for the empty snapshot its first sync
    /// starts with). A subset's round still reads them: the rows they name are kept.
    func beginPull(_ state: State, loaded: State, keepsEveryRow: Bool = true, _ db: Database) throws -> PullContext {
        db.transactionAuthor = Self.syncAuthor
        var state = state
        let local = try hasLocalTransactions(after: state.pushedToken, db)
        let settles = try local && (!keepsEveryRow || hasMetService(state, db))
        let unpushed = settles ? try unpushed(state, local: local, db) : []
        try settleLifetimes(unpushed, db)
        let retired = try hasRetirements(db)
        let stamps = try stamp(unpushed, state: &state, db)
        return PullContext(state: state, loaded: loaded, hasLocal: local, retired: retired,
                           pending: pendingRows(unpushed, stamps: stamps), reserved: Self.reservedRowIDs(unpushed),
                           resolver: ConflictResolver(configuration: configuration))
    }

    /// Whether any of this store's rows has met the service's: its first upload began, or a
    /// row has a global id (pulled, or made here and named for a push).
    func hasMetService(_ state: State, _ db: Database) throws -> Bool {
        try state.uploadFloor != nil || hasPushedBefore(db) || IdentityMap(db).last() != nil
    }

    /// Settles each pulled column of row `key` (written at `clock` by `device`; "" when the
    /// writer is not named per column) against this device's unpushed value, and returns
    /// the values to write.
    func settleColumns(_ values: [(String, SQLiteValue)], of table: LocalTable, key: RowKey, clock: (String) -> HybridClock, device: String,
                       _ context: inout PullContext, _ db: Database) throws -> [(String, SQLiteValue)] {
        var applied: [(String, SQLiteValue)] = []
        for (column, remote) in values {
            let local = context.pending[key]?.columns[column.lowercased()]
            let writer = ConflictResolver.Remote(clock: clock(column), device: device)
            let outcome = context.resolver.resolve(table: table.name, column: column, local: local, remote: remote, from: writer)
            try recordColumn(outcome, table: table, key: key, column: column, local: local, remote: remote, from: writer, context, db)
            if try settle(outcome, column: column, remote: remote, key: key, applied: &applied, pending: &context.pending, db) {
                context.merged = true
            }
        }
        return applied
    }

    /// Saves the state; with nothing local since the last push, what the log holds up to
    /// here is pushed or pulled, so later scans start here. (Not with fix-ups waiting: their
    /// transaction takes the number of the last logged one, which must stay above.) Returns
    /// whether merge results were recorded.
    func finishPull(_ context: PullContext, _ db: Database) throws -> Bool {
        var state = context.state
        if !context.merged, !context.hasLocal, try !hasFixUps(db) {
            state.pushed = try db.currentHistoryToken().sequence
        }
        try save(state, db, loaded: context.loaded)
        return context.merged
    }
}
