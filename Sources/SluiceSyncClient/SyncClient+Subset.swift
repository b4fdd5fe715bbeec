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
        let since = !snapshot && applied == wanted ? cursor : 0
        let feed = RowsFeed()
        let transport = transport
        return try await withThrowingTaskGroup(of: Void.self) { group in
            // The pages are fetched while the writer applies the ones already here.
            let fetch: @Sendable () async -> Void = {
                do {
                    feed.finish(.success(try await Self.fetchRound(subscriptions, since: since, device: device, transport: transport, into: feed)))
                } catch {
                    feed.finish(.failure(error))
                }
            }
            if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
                group.addTask(executorPreference: RowsFetchExecutor.shared, operation: fetch)
            } else {
                group.addTask(operation: fetch)
            }
            defer { group.cancelAll() }
            let (rows, merged) = try await store.write { db -> (Int, Bool) in
                let complete = since == 0
                let streams = try engine.streamsRows(db)
                var held: [SyncChange] = []
                var round = streams ? try engine.beginRows(receiving: [], complete: complete, subscriptions: subscriptions, db) : nil
                var rows = 0
                var head = since
                reading: while true {
                    switch try feed.next() {
                    case .page(let changes):
                        rows += changes.count
                        if var streaming = round.take() {
                            try engine.applyRows(changes, to: &streaming, db)
                            round = streaming
                        } else {
                            held += changes
                        }
                    case .end(let last):
                        head = last
                        break reading
                    }
                }
                // With changes unpushed here, the round is applied once all of it is here.
                let merged = if let round { try engine.finishRows(round, head: head, db) } else {
                    try engine.applyRows(held, head: head, complete: complete, subscriptions: subscriptions, db)
                }
                // A snapshot is the history's starting point, not a subset.
                if !snapshot { try engine.saveAppliedSubscriptions(wanted, db) }
                try engine.recordSnapshot(snapshot, db)
                return (rows, merged)
            }
            if merged { try await store.write { db in try engine.writeMerges(db) } }
            return rows
        }
    }

    /// The rows of a round's first page (the service's pages after it are whole, 10,000):
    /// the store's writer applies nothing until a page is here.
    static let firstPageRows = 1_000

    /// Fetches a round's pages into `feed`; returns the round's head.
    private static func fetchRound(_ subscriptions: [SyncSubscription], since start: Int64, device: String?, transport: any SyncTransport,
                                   into feed: RowsFeed) async throws -> Int64 {
        var since = start
        var head = since
        for round in 1...5 {
            var after: RowsPosition?
            var first: Int64?
            var last: Int64 = 0
            repeat {
                // The first page small, so the writer starts on it while the next, whole, comes.
                let limit = after == nil ? firstPageRows : nil
                let page = try await transport.rows(RowsRequest(since: since, subscriptions: subscriptions, after: after, limit: limit, device: device,
                                                                roundHead: first))
                feed.put(page.changes)
                first = first ?? page.head
                last = page.head
                after = page.next
            } while after != nil
            head = first ?? since
            if head == last || round == 5 { break }
            since = head
        }
        return head
    }
}
