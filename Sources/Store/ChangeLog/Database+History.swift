import Foundation

extension Database {
    // MARK: - History inside a transaction

    /// The token of everything committed so far, read inside this transaction (a sync
    /// client reads the log and writes its own state in one transaction).
    ///
    /// - Throws: `.notFound` when the file has no change log.
    ///
    /// - Returns: the token of the last transaction committed at this transaction's snapshot.
    ///
    /// - Complexity: O(1).
    public func currentHistoryToken() throws -> HistoryToken {
        try ChangeLog.currentToken(self)
    }

    /// The last sequence retention removed from the log, read inside this transaction (0
    /// when it removed none, or the file has no log): state kept beside the log, keyed by
    /// its sequences, can drop what lies at or below it.
    ///
    /// - Complexity: O(1).
    public func historyPrunedThrough() throws -> Int64 {
        ChangeLog.position(self)?.prunedThrough ?? 0
    }

    /// Records, inside this transaction, that `consumer` has processed the history up to
    /// `token`, registering the consumer when it is new (retention keeps every transaction
    /// after the least acknowledged one). An acknowledgement never moves back: a smaller
    /// sequence than the recorded one changes nothing.
    ///
    /// - Throws: `.invalidInput` for a token of another database.
    ///
    /// - Parameters:
    ///   - token: what it has processed.
    ///   - consumer: the consumer's name.
    ///
    /// - Complexity: O(1).
    public func acknowledgeHistory(_ token: HistoryToken, for consumer: String) throws {
        let current = try currentHistoryToken()
        guard token.databaseID == current.databaseID else {
            throw StoreError(code: .invalidInput, message: "history token \(token) belongs to another database (id \(token.databaseID)); this one is \(current.databaseID)")
        }
        try execute(sql: """
            INSERT INTO sluice_consumer (name, acknowledged, at) VALUES (?, ?, ?)
            ON CONFLICT (name) DO UPDATE SET acknowledged = max(acknowledged, excluded.acknowledged), at = excluded.at
            """, arguments: [.text(consumer), .integer(min(token.sequence, current.sequence)), .integer(LogWriter.now())])
    }

    /// Whether the log has a transaction after `token`, not written by `author`, that
    /// changed one of `tables` (ASCII case-insensitive): what a sync client asks before it
    /// reads the log for what it has not pushed. Reads the log's indexes only.
    ///
    /// - Parameters:
    ///   - token: where to look after.
    ///   - tables: the tables that count.
    ///   - author: the author whose transactions do not count (nil: all count).
    /// - Returns: whether there is such a transaction.
    /// - Throws: `StoreError` when the log cannot be read.
    /// - Complexity: O(t) over the transactions after `token`; their changes are not read.
    public func hasLoggedTransactions(after token: HistoryToken, touching tables: [String], notBy author: String?) throws -> Bool {
        try countLoggedTransactions(after: token, touching: tables, notBy: author, limit: 1) > 0
    }

    /// How many logged transactions after `token` changed one of `tables` and were not
    /// written by `author`: what ``loggedTransactions(after:tables:limit:includingOpen:)``
    /// would give with changes to those tables, counted without reading any change.
    ///
    /// - Parameters:
    ///   - token: where to look after.
    ///   - tables: the tables that count.
    ///   - author: the author whose transactions do not count (nil: all count).
    ///   - limit: stop counting here (nil: count all).
    /// - Returns: the number of such transactions.
    /// - Throws: `StoreError` when the log cannot be read.
    /// - Complexity: O(t) over the transactions after `token`; their changes are not read.
    public func countLoggedTransactions(after token: HistoryToken, touching tables: [String], notBy author: String?, limit: Int? = nil) throws -> Int {
        guard !tables.isEmpty else { return 0 }
        // A transaction's change rows are the ids from its first_change up to the next
        // transaction's (the log's range rule); first_change is NULL only in logs older than
        // that column, where the range then starts at 0 (slower, still right).
        let sql = """
            SELECT 1 FROM sluice_transaction t WHERE t.seq > ? AND t.author IS NOT ? AND EXISTS (
                SELECT 1 FROM sluice_change c
                WHERE c.id >= coalesce(t.first_change, 0)
                  AND c.id < coalesce((SELECT u.first_change FROM sluice_transaction u WHERE u.seq > t.seq ORDER BY u.seq LIMIT 1), 9223372036854775807)
                  AND c.seq = t.seq AND lower(c.tbl) IN (\(tables.map { _ in "?" }.joined(separator: ", "))))
            LIMIT ?
            """
        let author: SQLiteValue = author.map { .text($0) } ?? .null
        let rows = try fetchRows(sql: "SELECT count(*) FROM (\(sql))",
                                 arguments: [.integer(token.sequence), author] + tables.map { .text($0.lowercased()) } + [.integer(Int64(limit ?? -1))])
        if case .integer(let count)? = rows.first?.values.first { return Int(count) }
        return 0
    }

    /// The first logged transaction after `token` that `author` wrote: where a sync client's
    /// pulled history begins (edits of pulled rows can only come after it).
    ///
    /// - Returns: its sequence number, or nil when `author` wrote none after `token`.
    /// - Throws: `StoreError` when the log cannot be read.
    /// - Complexity: O(t) over the transactions after `token`; their changes are not read.
    public func firstLoggedTransaction(after token: HistoryToken, by author: String) throws -> Int64? {
        let rows = try fetchRows(sql: "SELECT min(seq) FROM sluice_transaction WHERE seq > ? AND author = ?",
                                 arguments: [.integer(token.sequence), .text(author)])
        if case .integer(let seq)? = rows.first?.values.first { return seq }
        return nil
    }

    /// The logged transactions after `token`, as `Store.changes(since:tables:limit:)`
    /// gives them, read inside this transaction.
    ///
    /// A foreign writer's newest logged transaction may still grow (its next
    /// commit joins it until it is closed). In a write transaction it is closed
    /// first; in a read it is left out, unless `includingOpen` (for counting
    /// what is there: never move a cursor past it).
    ///
    /// - Parameters:
    ///   - token: where to start.
    ///   - tables: only changes to these tables; all when nil.
    ///   - limit: at most this many transactions; all when nil.
    ///   - includingOpen: whether a foreign writer's transaction that may still grow is included.
    /// - Returns: the transactions, oldest first.
    /// - Throws: `.historyExpired` when retention removed transactions after
    ///   `token`; `.invalidInput` for a token of another database.
    /// - Complexity: O(t + c) for t transactions and c changed rows read.
    public func loggedTransactions(after token: HistoryToken, tables: [String]? = nil, limit: Int? = nil,
                                   includingOpen: Bool = false) throws -> [LoggedTransaction] {
        let names = try tables.map { try Set($0.map { try tableInfo($0).name.lowercased() }) }
        return try ChangeLog.transactions(after: token, tables: names, limit: limit, includingOpen: includingOpen, self)
    }

    /// Runs `action` when this write transaction commits, once the change log
    /// has recorded it, inside the transaction (before COMMIT), with the
    /// transaction's own token: what it writes commits with the transaction,
    /// or not at all. Not run when the transaction logs nothing (it changed
    /// no logged row) or rolls back. For bookkeeping about a logged
    /// transaction in tables of one's own (a sync client records which device
    /// wrote a pulled transaction): write only to tables that are not logged.
    ///
    /// - Parameter action: what to run, given the transaction's token.
    public func whenLogged(_ action: @escaping (HistoryToken) throws -> Void) {
        commitActions.append { [unowned self] in
            guard broker?.observer(of: LogWriter.self)?.sequenceOfThisTransaction != nil else { return }
            try action(try currentHistoryToken())
        }
    }
}
