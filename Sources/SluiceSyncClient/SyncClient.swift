import Foundation
import SluiceSyncProtocol
import Sluice

/// Syncs one store with a sync service: pushes its unpushed local transactions, pulls
/// what other devices pushed and applies each page of pulled transactions as one local
/// transaction (author `"sync"`; each pulled transaction in a savepoint of its own), so
/// live queries emit ordinary changesets.
///
/// ```swift
/// let client = try SyncClient(store: store, server: URL(string: "http://127.0.0.1:8080")!,
///                             token: token, configuration: SyncConfiguration(tables: ["person", "package"]))
/// try await client.sync()          // once
/// try await client.follow()        // until cancelled: pushes each local commit, pulls as others push
/// ```
///
/// Offline writes wait in the change log (a history consumer keeps retention from
/// dropping them); an interrupted push or pull is retried without losing or
/// duplicating anything (every step commits its state with its effect).
public actor SyncClient {
    /// What the client is doing.
    public enum Status: Sendable, Equatable {
        /// Nothing to do, or not started.
        case idle
        /// Pushing or pulling.
        case syncing
        /// The service cannot be reached; local writes wait in the log.
        case offline(String)
        /// The last sync failed for another reason (a refused change, a revoked token).
        case error(String)
    }

    /// A snapshot of the client's state, as `updates` yields it.
    public struct Snapshot: Sendable, Equatable {
        /// What it is doing.
        public var status: Status
        /// Local transactions not pushed yet.
        public var pendingChangeCount: Int
        /// When the last sync completed.
        public var lastSync: Date?
        /// The last history sequence pulled.
        public var cursor: Int64
        /// Pulled transactions this device could not apply, set aside (see ``quarantined()``).
        public var quarantinedCount = 0
    }

    /// What one ``SyncClient/sync()`` did.
    public struct Report: Sendable, Equatable {
        /// Transactions this device pushed (the service may have had some already).
        public var pushed: Int
        /// Transactions other devices wrote that were applied here.
        public var pulled: Int
        /// The last history sequence pulled.
        public var cursor: Int64
        /// Pushed transactions whose clock the service found too far ahead of its own and
        /// stored with its clock instead: this device's clock is wrong.
        public var clampedClocks = 0
        /// Pushes the service sent back to be rebased first (it had transactions this device
        /// had not pulled, writing what the push writes).
        public var behind = 0
        /// Whether this device took a new id during the sync (its store is a copy, or
        /// another store pushed under its id); nothing is lost either way.
        public var reidentified = false
        /// Rows pulled as current values rather than history: a snapshot (a new device, or
        /// one back from beyond the service's horizon) or a subset's rows.
        public var rows = 0
        /// Chunks of attachments uploaded, and fetched (a cut transfer sends only the rest).
        public var chunksUploaded = 0, chunksFetched = 0
    }

    /// A store's sync state as saved in the store, read without contacting the service.
    public struct SavedState: Sendable, Equatable {
        /// This device's id.
        public var deviceID: String
        /// Local transactions not pushed yet.
        public var pendingChangeCount: Int
        /// When the last sync completed (nil if none has).
        public var lastSync: Date?
        /// The last history sequence pulled.
        public var cursor: Int64
        /// Pulled transactions this device could not apply, set aside.
        public var quarantinedCount = 0
    }

    /// The sync state saved in `store` (nil when it has never been synced); changes nothing.
    ///
    /// - Parameters:
    ///   - store: the store.
    ///   - configuration: the sync configuration.
    /// - Returns: the saved state, or nil.
    /// - Throws: `StoreError` when the sync tables cannot be read.
    public static func savedState(of store: Store, configuration: SyncConfiguration) throws -> SavedState? {
        let engine = SyncEngine(configuration: configuration)
        return try store.read { db in
            guard let state = try engine.loadState(db) else { return nil }
            try engine.loadTables(db)
            return SavedState(deviceID: state.device, pendingChangeCount: try engine.pendingCount(db),
                              lastSync: try engine.lastSync(db), cursor: state.cursor, quarantinedCount: try engine.quarantinedCount(db))
        }
    }

    let store: Store
    let engine: SyncEngine
    let transport: any SyncTransport
    /// What this device syncs of each table (nil: everything; see ``subscribe(_:)``).
    var subscriptions: [SyncSubscription]?
    /// The latest snapshot.
    public private(set) var snapshot = Snapshot(status: .idle, pendingChangeCount: 0, lastSync: nil, cursor: 0)
    /// A page `follow()`'s long poll brought, and the cursor it follows: the next pull from
    /// that cursor takes it instead of asking the service again.
    var prefetched: (since: Int64, page: PullResponse)?

    /// The quarantined transactions of this client's store (see ``QuarantinedTransaction``).
    ///
    /// - Returns: the quarantined transactions, oldest first.
    /// - Throws: `StoreError` when the sync tables cannot be read.
    public func quarantined() throws -> [QuarantinedTransaction] {
        try Self.quarantined(in: store, configuration: engine.configuration)
    }
    /// Every snapshot as the client's state changes, the latest one first (each access
    /// gives a stream of its own: several observers each see every change; see ``SyncStatus``).
    public nonisolated var updates: AsyncStream<Snapshot> { broadcast.subscribe() }
    private nonisolated let broadcast = SnapshotBroadcast()

    /// A client for `store`; creates the sync tables (and a device id) on first use, and
    /// installs the change-log triggers of the synced tables (`trackForeignWriters`), so
    /// that changes other programs write are synced too.
    ///
    /// - Throws: `.unknownTable` / `.unsupportedTable` for a synced table this store
    ///   cannot sync (it must have an `INTEGER PRIMARY KEY` or none).
    ///
    /// - Parameters:
    ///   - store: the store to sync.
    ///   - server: the service's base URL.
    ///   - token: the bearer the service issued for this user and space (`sluice-sync token
    ///     add`, `share`), or a JWT the app's backend signed (`serve --jwt-secret-file`).
    ///   - configuration: the synced tables and how conflicts are settled.
    public init(store: Store, server: URL, token: String, configuration: SyncConfiguration) throws {
        try self.init(store: store, transport: HTTPSyncTransport(server: server, token: token, space: configuration.space,
                                                                 schemaVersion: configuration.schemaVersion),
                      configuration: configuration)
    }

    /// A client that reaches the service through `transport`: your own networking, a proxy,
    /// or a service in memory in tests.
    ///
    /// - Parameters:
    ///   - store: the store to sync.
    ///   - transport: how requests reach the service (``HTTPSyncTransport`` for HTTP).
    ///   - configuration: the synced tables and how conflicts are settled.
    /// - Throws: as ``init(store:server:token:configuration:)``.
    public init(store: Store, transport: any SyncTransport, configuration: SyncConfiguration) throws {
        self.store = store
        engine = SyncEngine(configuration: configuration)
        self.transport = transport
        subscriptions = configuration.subscriptions
        let engine = engine
        try engine.check(configuration.subscriptions)
        try SyncStateFormat.migrate(store)
        let file = store.path
        let state = try store.write { db in try engine.prepare(db, file: file) }
        // Writers that are not Sluice (the sqlite3 shell, another tool) fill the log too, so
        // their changes are pushed like the app's own.
        let tracked = Set(try store.foreignTrackedTables().map { $0.lowercased() })
        let untracked = configuration.tables.filter { !tracked.contains($0.lowercased()) }
        if !untracked.isEmpty { try store.trackForeignWriters(tables: untracked) }
        snapshot.cursor = state.cursor
        snapshot.lastSync = try store.read { db in try engine.lastSync(db) }
        snapshot.pendingChangeCount = try store.read { db in try engine.pendingCount(db) }
        broadcast.yield(snapshot)
    }

    deinit { broadcast.finish() }

    /// This device's id (a UUID, made on first use).
    public var deviceID: String {
        get async throws {
            let engine = engine
            return try await store.read { db in try engine.loadState(db)?.device ?? "" }
        }
    }

    /// Local transactions not pushed yet.
    ///
    /// - Returns: how many local transactions wait to be pushed.
    /// - Throws: `StoreError` when the change log cannot be read.
    public func pendingChangeCount() async throws -> Int {
        let engine = engine
        return try await store.read { db in try engine.pendingCount(db) }
    }

    /// Pulls everything new, then pushes everything unpushed (pulling again when another
    /// device pushed in between), until the service and this store agree.
    ///
    /// - Returns: how many transactions went each way.
    /// - Throws: `SyncClientError` (`.offline` when the service cannot be reached:
    ///   nothing is lost, call again later), or a `StoreError` from the store.
    @discardableResult
    public func sync() async throws -> Report {
        await publish(.syncing, refresh: false)
        // The part of a first upload sent before the part ahead of it is answered: answered
        // before anything else goes on (a pull, a new id, an error thrown).
        var pipeline = UploadPipeline()
        do {
            let engine = engine
            // Merge results recorded by a pull that was interrupted before writing them.
            // A store that has pushed before and has something to push pushes first: the
            // service appends a push after transactions it has not seen when they write other
            // rows and columns (and sends it back to be rebased when they don't), so the pull
            // that follows finds nothing of this store's pending and applies each page as one
            // local transaction.
            var limit = engine.configuration.pushBatchSize
            var rows = engine.configuration.uploadBatchRows
            // The same transaction makes the first push (unless merge results were written:
            // the log has them only once it commits), or reads where the pull starts: one
            // commit fewer on the way between a commit and the other devices.
            let subset = subscriptions != nil
            let (device, pushFirst, first, start) = try await store.write { [limit, rows] db in
                let merged = try engine.writeMerges(db)
                let pushFirst = try engine.hasSomethingToPush(db)
                return (try engine.loadState(db)?.device, pushFirst, pushFirst && !merged ? try engine.makePush(db, limit: limit, rows: rows) : nil,
                        pushFirst || subset ? nil : try Self.pullStart(engine, db))
            }
            var report = Report(pushed: 0, pulled: 0, cursor: 0)
            var rounds = 0
            var conflicts = 0
            var pull = !pushFirst
            var made = first
            var started = start
            // Whether the last push was appended right after what this store had pulled.
            var agreed = false
            var finalDevice: String?
            // The next part of a first upload, made while the part before it travelled.
            var madeAhead: Task<SyncEngine.Push?, any Error>?
            while true {
                rounds += 1
                if pull {
                    await pipeline.settle()
                    try await pullAll(into: &report, from: started)
                    started = nil
                }
                // With nothing left to push, the store and the service agree when nothing
                // came in since this store last heard from the service; then the same
                // transaction records the sync as completed.
                let finishing = pull || agreed
                // A part made ahead is sent when nothing came in meanwhile.
                let ahead = pull ? nil : try await madeAhead?.value
                madeAhead = nil
                pull = true
                let (next, completed, deviceNow): (SyncEngine.Push?, Bool, String?)
                if let push = made {
                    made = nil
                    (next, completed, deviceNow) = (push, false, nil)
                } else if let sent = pipeline.ahead {
                    (next, completed, deviceNow) = (sent.push, false, nil)
                } else {
                    (next, completed, deviceNow) = try await store.write { [limit, rows] db -> (SyncEngine.Push?, Bool, String?) in
                        if var push = ahead, let state = try engine.loadState(db) {
                            // Made on the cursor before the part ahead of it was taken.
                            push.request.base = state.cursor
                            return (push, false, nil)
                        }
                        if let push = try engine.makePush(db, limit: limit, rows: rows) { return (push, false, nil) }
                        guard finishing else { return (nil, false, nil) }
                        try engine.syncCompleted(db)
                        return (nil, true, try engine.loadState(db)?.device)
                    }
                }
                guard let push = next else {
                    if completed {
                        finalDevice = deviceNow
                        break
                    }
                    continue
                }
                agreed = false
                let outcome: SyncPushOutcome
                // The head this push goes right after when nothing this store has not pulled
                // comes between (a part sent ahead: the head of the part before it).
                var follows: Int64? = push.request.base
                let sentAhead = pipeline.take(push)
                do {
                    let answer: Task<SyncPushOutcome, any Error>
                    if let sentAhead {
                        answer = sentAhead.answer
                        follows = sentAhead.follows
                    } else {
                        try await upload(push.attachments, into: &report)
                        answer = Task { [transport] in try await transport.push(push.request) }
                    }
                    // A first upload's next part is made (read, given ids, stamped) while this
                    // one travels and the service stores it; and sent, on the same base, when
                    // the service keeps the parts in order.
                    if push.upload != nil {
                        let making = Task { [rows] in try await store.write { db in try engine.uploadPush(after: push, rows: rows, db) } }
                        if pipeline.ordered {
                            if let part = try await making.value {
                                try await upload(part.attachments, into: &report)
                                pipeline.ahead = UploadPipeline.Sent(push: part, answer: Task { [transport] in try await transport.push(part.request) })
                            }
                        } else {
                            madeAhead = making
                        }
                    }
                    outcome = try await answer.value
                } catch SyncClientError.rejected(_, let body) where body.code == .outOfOrder && sentAhead != nil {
                    // Sent ahead, it overtook the part before it (taken since): sent again.
                    await pipeline.settle()
                    var again = push
                    again.request.base = follows ?? push.request.base
                    made = again
                    pull = false
                    continue
                } catch SyncClientError.rejected(let status, let body) where status == 403 {
                    // This member may not write this (a viewer, or a table it may not
                    // write): its changes stay queued, and what others wrote still comes in.
                    await pipeline.settle()
                    try await pullAll(into: &report)
                    throw SyncClientError.rejected(status: status, body)
                } catch SyncClientError.rejected(let status, let body) where status == 413 {
                    // Over the service's limits: send half as much at a time. A single
                    // transaction, or row of the upload, over them cannot be split: the
                    // error stands.
                    await pipeline.settle()
                    let transactions = push.request.transactions
                    if push.upload != nil, let count = transactions.first?.changes.count, count > 1 {
                        rows = count / 2
                    } else if push.upload == nil, transactions.count > 1 {
                        limit = transactions.count / 2
                    } else {
                        throw SyncClientError.rejected(status: status, body)
                    }
                    continue
                }
                switch outcome {
                case .accepted(let response):
                    report.pushed += push.request.transactions.count
                    report.clampedClocks += response.clamped ?? 0
                    rounds = 0
                    // The new cursor, when nothing this device has not pulled came between its
                    // base and its own transactions (the service may put them after such).
                    let contiguous = response.appended > 0 && follows == response.head - Int64(response.appended)
                    let head = contiguous ? response.head : nil
                    // The service's own transactions after the push (its ON DELETE actions)
                    // are pulled before the sync ends.
                    let followed = (response.followedBy ?? response.head) > response.head
                    pull = !contiguous || followed
                    // A subset device pulls after its push all the same: the rows it wrote
                    // outside its subscriptions leave it then.
                    agreed = contiguous && !followed && subscriptions == nil
                    if response.keepsUploadOrder == true { pipeline.ordered = true }
                    // The part sent ahead goes right after this one, or is forgotten.
                    if contiguous && !followed { pipeline.ahead?.follows = response.head } else { await pipeline.settle() }
                    try await store.write { db in
                        if let progress = push.upload {
                            try engine.uploaded(progress, head: head, served: response.head, db)
                        } else if let last = push.last {
                            try engine.pushed(through: last, head: head, served: response.head, fixUps: push.fixUps, db)
                        }
                    }
                case .behind:
                    await pipeline.settle()
                    report.behind += 1
                    guard rounds < 50 else { throw SyncClientError.protocolViolation("still behind after 50 pulls") }
                case .identityConflict(let message):
                    // Another store pushed under this id (this store is a copy of it, or claims
                    // its id), or the id is another token's: a new id, then the same push again.
                    conflicts += 1
                    await pipeline.settle()
                    guard conflicts <= 3 else { throw SyncClientError.rejected(status: 409, SyncErrorBody(.identityConflict, message: message)) }
                    try await store.write { db in
                        guard var state = try engine.loadState(db), state.device == push.request.device else { return }
                        try engine.reidentify(&state, db)
                    }
                }
            }
            try await fetchAttachments(eagerOnly: true, rows: nil, into: &report)
            snapshot.lastSync = Date()
            await publish(.idle)
            report.cursor = snapshot.cursor
            report.reidentified = finalDevice != device
            return report
        } catch let error as SyncClientError {
            await pipeline.settle()
            if case .offline(let reason) = error { await publish(.offline(reason)) } else { await publish(.error(error.description)) }
            throw error
        } catch {
            await pipeline.settle()
            await publish(.error("\(error)"))
            throw error
        }
    }

    /// Syncs now, then again after every local commit and whenever the service has
    /// something new (a long poll), until the task is cancelled.
    ///
    /// Failures do not end it: offline, the client reports `.offline` and retries with a
    /// growing pause (200 ms doubling to 5 s); any other failure (a refused request, such as
    /// 429 when over the rate limit, an unexpected answer, a store error) is reported as
    /// `.error` and retried the same way, up to 30 s apart, while the app decides what to do.
    ///
    /// - Throws: `SyncClientError.unauthorized` when the service refuses the token (retrying
    ///   cannot help: a new token is needed); an error of the store's change feed.
    public func follow() async throws {
        let (kicks, kick) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let transport = transport
        let store = store
        let engine = engine
        let subset = subscriptions
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // Something new on the service.
                var pause: Duration = .milliseconds(200)
                // The head already announced: waiting again since it (not since the cursor,
                // which moves only when the sync it kicked has pulled) does not spin.
                var announced: Int64 = 0
                // A page that waits (one round trip for a commit elsewhere), unless the
                // service cannot (then the head, and a pull); a subset device pulls rows.
                var pagesWait = subset == nil
                while !Task.isCancelled {
                    do {
                        let (cursor, device) = try await store.read { db in
                            let state = try engine.loadState(db)
                            return (state?.cursor ?? 0, state?.device)
                        }
                        let since = max(cursor, announced)
                        if pagesWait, let page = try await transport.pull(since: since, device: device, waiting: 20) {
                            if let last = page.transactions.last?.seq, last > announced {
                                announced = last
                                await self.offer(page, since: since)
                                kick.yield()
                            }
                            pause = .milliseconds(200)
                            continue
                        }
                        pagesWait = false
                        let head = try await transport.wait(since: since, timeout: 20)
                        if head > cursor, head > announced {
                            announced = head
                            kick.yield()
                        }
                        pause = .milliseconds(200)
                    } catch is CancellationError {
                        return
                    } catch {
                        // A refused token: the sync this kicks finds out and ends `follow`.
                        if case SyncClientError.unauthorized = error { kick.yield() }
                        try? await Task.sleep(for: pause)
                        pause = min(pause * 2, .seconds(5))
                    }
                }
            }
            group.addTask {
                // Something new here (a local commit that is not a pulled one).
                let start = try store.currentToken
                for try await transaction in store.transactions(from: start) where transaction.author != SyncEngine.syncAuthor {
                    kick.yield()
                }
            }
            kick.yield()
            var pause: Duration = .milliseconds(200)
            for await _ in kicks {
                if Task.isCancelled { break }
                do {
                    try await sync()
                    pause = .milliseconds(200)
                } catch is CancellationError {
                    break
                } catch let error as SyncClientError {
                    if case .unauthorized = error { throw error }
                    // `sync` reported it (.offline or .error); try again after the pause.
                    let longest: Duration = if case .offline = error { .seconds(5) } else { .seconds(30) }
                    try await Task.sleep(for: min(pause, longest))
                    pause = min(pause * 2, longest)
                    kick.yield()
                } catch {
                    try await Task.sleep(for: pause)
                    pause = min(pause * 2, .seconds(30))
                    kick.yield()
                }
            }
            group.cancelAll()
        }
    }

    /// Sets the status and tells the `updates` streams; with `refresh`, reads the cursor and
    /// the counts again first (one read, awaited: a blocking read here held one of the few
    /// threads every task of the app shares).
    private func publish(_ status: Status, refresh: Bool = true) async {
        snapshot.status = status
        if refresh {
            let engine = engine
            if let (cursor, pending, quarantined) = try? await store.read({ db in
                (try engine.loadState(db)?.cursor, try engine.pendingCount(db), try engine.quarantinedCount(db))
            }) {
                if let cursor { snapshot.cursor = cursor }
                snapshot.pendingChangeCount = pending
                snapshot.quarantinedCount = quarantined
            }
        }
        broadcast.yield(snapshot)
    }
}
