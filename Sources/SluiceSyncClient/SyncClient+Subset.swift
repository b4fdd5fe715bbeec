import SluiceSyncProtocol
import Sluice

extension SyncClient {
    // MARK: - Partial sync

    /// Changes what this device syncs, at run time, and syncs: rows the new subscriptions
    /// keep arrive, rows they no longer keep go (here only), as one local transaction.
    ///
    /// ```swift
    /// try await client.subscribe([try .rows(of: Package.self, where: \.weight > 1_000)])
    /// ```
    ///
    /// - Parameter subscriptions: the rows to sync per table (nil: every row of every synced
    ///   table, from the whole history).
    /// - Returns: the sync's report.
    /// - Throws: `StoreError` for a subscription to a table this device does not sync or a
    ///   filter that does not parse; `SyncClientError.rejected` (400 `invalid`) for one the
    ///   service refuses (a path to a list, an unknown column); what ``sync()`` throws.
    @discardableResult
    public func subscribe(_ subscriptions: [SyncSubscription]?) async throws -> Report {
        try engine.check(subscriptions)
        self.subscriptions = subscriptions
        return try await sync()
    }

    /// Pulls a round of the subscriptions' rows and applies it as one local transaction;
    /// returns how many rows it held.
    ///
    /// A round's pages may be read at different heads (pushes commit between them): then
    /// the rows changed since the first head are pulled again, until a round's pages all
    /// have one head (at most five rounds; the next sync settles what a busy service left).
    func pullRows(_ subscriptions: [SyncSubscription]) async throws -> Int {
        try await pullRows(subscriptions, snapshot: false)
    }

    /// A snapshot of every synced table's rows (a complete round), for a device that syncs
    /// the history: a new one, or one back from beyond the service's horizon.
    func pullSnapshot() async throws -> Int {
        try await pullRows(engine.configuration.tables.map { SyncSubscription(table: $0) }, snapshot: true)
    }

    private func pullRows(_ subscriptions: [SyncSubscription], snapshot: Bool) async throws -> Int {
        let engine = engine
        let wanted = try SyncEngine.subscriptionKey(subscriptions)
        let (state, applied) = try await store.read { db in (try engine.loadState(db), try engine.appliedSubscriptions(db)) }
        let (cursor, device) = (state?.cursor ?? 0, state?.device)
        var since = !snapshot && applied == wanted ? cursor : 0
        let complete = since == 0
        var changes: [SyncChange] = []
        var head = since
        for round in 1...5 {
            var after: RowsPosition?
            var first: Int64?
            var last: Int64 = 0
            repeat {
                let page = try await transport.rows(RowsRequest(since: since, subscriptions: subscriptions, after: after, device: device))
                changes += page.changes
                first = first ?? page.head
                last = page.head
                after = page.next
            } while after != nil
            head = first ?? since
            if head == last || round == 5 { break }
            since = head
        }
        let rows = changes
        let merged = try await store.write { [head] db in
            let merged = try engine.applyRows(rows, head: head, complete: complete, subscriptions: subscriptions, db)
            // A snapshot is the history's starting point, not a subset.
            if !snapshot { try engine.saveAppliedSubscriptions(wanted, db) }
            try engine.recordSnapshot(snapshot, db)
            return merged
        }
        if merged { try await store.write { db in try engine.writeMerges(db) } }
        return rows.count
    }
}
