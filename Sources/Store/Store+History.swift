import Foundation

extension Store {
    // MARK: - History

    /// The token of everything committed so far: persist it, and later ask
    /// `changes(since:)` for what came after.
    ///
    /// - Throws: `.notFound` when the file has no change log.
    public var currentToken: HistoryToken {
        get throws { try read { db in try ChangeLog.currentToken(db) } }
    }

    /// The oldest token `changes(since:)` accepts: the log holds every
    /// transaction after it (retention removed the ones before).
    public var earliestToken: HistoryToken {
        get throws {
            try read { db in
                let current = try ChangeLog.currentToken(db)
                return HistoryToken(databaseID: current.databaseID, sequence: try db.historyPrunedThrough())
            }
        }
    }

    /// The transactions committed after `token`, oldest first, with every
    /// row they changed and its values; optionally only their changes to
    /// some tables (transactions that changed none of them are left out).
    ///
    /// ```swift
    /// for transaction in try store.changes(since: savedToken) {
    ///     for change in transaction.changes where change.table == "person" {
    ///         print(change.operation, change.key, try change.newValue("age", as: Int.self) as Any)
    ///     }
    /// }
    /// savedToken = try store.currentToken
    /// ```
    ///
    /// - Throws: `.historyExpired` when retention removed transactions after
    ///   `token` (never a silent gap); `.invalidInput` for a token of another
    ///   database or one ahead of this one; `.unknownTable`.
    ///
    /// - Parameters:
    ///   - token: where the caller stopped (`currentToken`, or a transaction's token).
    ///   - tables: only changes to these tables; all when nil.
    ///   - limit: at most this many transactions; all when nil.
    /// - Returns: the transactions, oldest first.
    /// - Complexity: O(t + c) for t transactions and c changed rows read: the
    ///   log's ids are ranges, no scan of earlier history.
    public func changes(since token: HistoryToken, tables: [String]? = nil, limit: Int? = nil) throws -> [LoggedTransaction] {
        try sealForeignTransaction()
        return try read { db in
            let names = try tables.map { try Set($0.map { try db.tableInfo($0).name.lowercased() }) }
            return try ChangeLog.transactions(after: token, tables: names, limit: limit, db)
        }
    }

    /// The transactions after `token`, then each new one as it commits, in
    /// any process, for as long as the sequence is iterated.
    ///
    /// ```swift
    /// for try await transaction in store.transactions(from: token) { ... }
    /// ```
    ///
    /// The sequence ends with `.historyExpired` when `token` has expired,
    /// and with an error if the log cannot be read.
    ///
    /// - Parameter token: where to start: the transactions after it come first.
    /// - Returns: a sequence that waits for each commit (woken by the file's
    ///   events, as live queries are: no polling).
    ///
    /// - Complexity: O(t + c) per wake-up for t new transactions and c changed rows.
    public func transactions(from token: HistoryToken) -> AsyncThrowingStream<LoggedTransaction, Error> {
        AsyncThrowingStream { continuation in
            let observation = HistoryObservation(from: token, continuation: continuation) { [weak self] in
                guard let self else { return }
                Task { try? await self.write { db in try ChangeLog.sealForeignTransaction(db) } }
            }
            let observationToken = register(observation)
            continuation.onTermination = { _ in observationToken.invalidate() }
        }
    }

    /// Closes a foreign writer's newest logged transaction, when there is
    /// one, so history can hand it out whole (`ChangeLog.transactions(after:)`).
    /// Nothing to do on a read-only store: it leaves that transaction out.
    func sealForeignTransaction() throws {
        guard !configuration.readOnly else { return }
        // No log (or none readable): nothing to close; the read that follows says why.
        let open: Int64? = try? read { db in try ChangeLog.openForeignTransaction(db) }
        guard open != nil else { return }
        try write { db in try ChangeLog.sealForeignTransaction(db) }
    }

    /// How many logged transactions of foreign writers (the shell, other
    /// tools) were closed, and how many of them may hold more than one
    /// commit: commits that landed with no store of this or another
    /// process observing the file between them (a live query or a history
    /// stream open) cannot be told apart, and share one. A foreign commit
    /// is never split. A transaction known to be one commit carries its
    /// commit's number in the log, as a Sluice writer's does.
    ///
    /// - Throws: `StoreError` when the log cannot be read.
    public func foreignCommitCounts() throws -> (closed: Int, mayHoldSeveralCommits: Int) {
        try read { db in
            guard try ChangeLog.exists(db) else { return (0, 0) }
            let counts = try ChangeLog.foreignCommitCounts(db)
            return (counts.sealed, counts.unproven)
        }
    }

    // MARK: - Foreign writers

    /// Installs triggers on `tables` so that writers that are not Sluice
    /// (the `sqlite3` shell, other tools) record their changes in the
    /// change log too; then other processes' changes to these tables reach
    /// live queries incrementally, and history holds them. Tables not
    /// tracked still work: their observers re-read them after any other
    /// connection's commit.
    ///
    /// A foreign commit is logged whole, never split; commits that no
    /// store of this process saw apart (no live query or history stream
    /// was open between them) share a logged transaction
    /// (`foreignCommitCounts()` counts them). A foreign writer's newest
    /// logged transaction stays open to its next commit, so history hands
    /// it out only once it is closed: a writable store closes it when
    /// history is read and before each of its own writes; a read-only one
    /// leaves it out until a later transaction follows. With the `sqlite3`
    /// shell's default `recursive_triggers = OFF`, rows that its `REPLACE`
    /// deletes are logged by the BEFORE triggers.
    ///
    /// - Throws: `.unknownTable`, `.unsupportedTable` (views, virtual and
    ///   `WITHOUT ROWID` tables, Sluice's own); nothing is installed then.
    ///
    /// - Parameter tables: the tables to track.
    ///
    /// - Complexity: O(t) triggers created for t tables; afterwards a foreign
    ///   writer's change costs one log row per changed row.
    public func trackForeignWriters(tables: [String]) throws {
        try write { db in try ForeignTracking.track(tables, db) }
    }

    /// Removes the foreign-writer triggers of `tables` (of every tracked
    /// table when nil), and nothing else; returns the tables untracked.
    ///
    /// - Parameter tables: the tables to untrack; every tracked one when nil.
    /// - Returns: the tables untracked.
    /// - Throws: `StoreError` when the triggers cannot be dropped (nothing is then dropped).
    ///
    /// - Complexity: O(t) triggers dropped.
    @discardableResult
    public func untrackForeignWriters(tables: [String]? = nil) throws -> [String] {
        try write { db in
            let tracked = try ForeignTracking.trackedTables(db)
            let names = try tables.map { try $0.map { try db.tableInfo($0).name } } ?? tracked
            let removing = tracked.filter { table in names.contains { $0.lowercased() == table.lowercased() } }
            for table in removing { try ForeignTracking.untrack(table, db) }
            return removing
        }
    }

    /// The tables whose foreign writers fill the change log.
    ///
    /// - Returns: the tracked tables' names, lower-cased, sorted.
    /// - Throws: `StoreError` when the schema cannot be read.
    ///
    /// - Complexity: one scan of `sqlite_schema`.
    public func foreignTrackedTables() throws -> [String] {
        try read { db in try ForeignTracking.trackedTables(db) }
    }
}

/// Feeds `Store.transactions(from:)`: reads the log past its cursor at each
/// snapshot the observation center brings it to.
final class HistoryObservation: StoreObservation, TokenBearing, @unchecked Sendable {
    // @unchecked Sendable: used only on the observation queue after registration.
    private var cursor: HistoryToken
    private let continuation: AsyncThrowingStream<LoggedTransaction, Error>.Continuation
    private var finished = false
    var token: ObservationToken?

    /// Asks the store's writer to seal a foreign writer's newest logged
    /// transaction, which reads leave out until then.
    private let requestSeal: @Sendable () -> Void
    /// The open transaction a seal was asked for already.
    private var sealRequested: Int64?

    init(from token: HistoryToken, continuation: AsyncThrowingStream<LoggedTransaction, Error>.Continuation,
         requestSeal: @escaping @Sendable () -> Void) {
        cursor = token
        self.continuation = continuation
        self.requestSeal = requestSeal
    }

    func start(_ db: Database, pin: ReadPin) { readOn(db) }

    func update(_ db: Database, pin: ReadPin, changes: ChangedRows, silent: Bool) { readOn(db) }

    private func readOn(_ db: Database) {
        guard !finished else { return }
        do {
            while true {
                let batch = try ChangeLog.transactions(after: cursor, limit: 1000, db)
                for transaction in batch { continuation.yield(transaction) }
                guard let last = batch.last else { break }
                cursor = last.token
            }
            if let open = try ChangeLog.openForeignTransaction(db), open > cursor.sequence, sealRequested != open {
                sealRequested = open
                requestSeal()
            }
        } catch {
            finished = true
            continuation.finish(throwing: error)
            token?.invalidate()
        }
    }
}

extension Store {
    // MARK: - Consumers

    /// Registers a consumer of the history (a sync client, a widget's
    /// refresher) that has processed everything up to `token`: retention
    /// never removes a transaction it has not acknowledged.
    ///
    /// - Parameters:
    ///   - name: the consumer's name, unique in the database.
    ///   - token: what it has processed.
    /// - Throws: `StoreError` (`.invalidInput` for a token of another database).
    ///
    /// - Complexity: O(1).
    public func registerHistoryConsumer(_ name: String, at token: HistoryToken) throws {
        try acknowledge(token, for: name)
    }

    /// Records that a consumer has processed everything up to `token`.
    ///
    /// - Parameters:
    ///   - token: what it has processed now.
    ///   - consumer: the consumer's name.
    /// - Throws: `StoreError` (`.notFound` for a consumer never registered,
    ///   `.invalidInput` for a token of another database).
    ///
    /// - Complexity: O(1).
    public func acknowledge(_ token: HistoryToken, for consumer: String) throws {
        try write { db in
            try ChangeLog.check(token, db)
            try db.execute(sql: "INSERT INTO sluice_consumer (name, acknowledged, at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET acknowledged = excluded.acknowledged, at = excluded.at",
                           arguments: [.text(consumer), .integer(token.sequence), .integer(LogWriter.now())])
        }
    }

    /// Removes a consumer: retention no longer waits for it.
    ///
    /// - Parameter name: the consumer's name.
    /// - Throws: `StoreError` when the log cannot be written.
    ///
    /// - Complexity: O(1).
    public func removeHistoryConsumer(_ name: String) throws {
        try write { db in try db.execute(sql: "DELETE FROM sluice_consumer WHERE name = ?", arguments: [.text(name)]) }
    }
}
