import Foundation
import SluiceSyncConformance
import SluiceDemo
import Logging
import PostgresNIO
@testable import SluiceSync
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// The live channel: a push's `NOTIFY` wakes the long polls of every instance
/// (`HeadSignal`, `HeadListener`), and a following client stops when its task is cancelled.
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct LiveChannelTests {
    /// Runs `body` and fails (instead of hanging) when it takes longer than `seconds`.
    static func within<T: Sendable>(_ seconds: Int, _ what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T? {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            if first == nil { Issue.record("\(what) did not finish within \(seconds) s") }
            return first
        }
    }

    @Test func signalTicketsWakeWaitersOfTheirSpaceOnly() async throws {
        let signal = HeadSignal()
        #expect(!signal.isListening)
        let before = signal.ticket(1)
        signal.notify(space: 1)
        // A notification after the ticket: the wait returns at once, whatever its timeout.
        let stale = try await Self.within(60, "a wait on a stale ticket") {
            await signal.wait(space: 1, after: before, upTo: .seconds(3_600))
            return true
        }
        #expect(stale == true)
        #expect(signal.ticket(1) == before + 1)
        #expect(signal.ticket(2) == 0)

        // A waiter in space 2 is woken by space 2's notification, not by space 1's.
        let ticket = signal.ticket(2)
        let waiter = Task { await signal.wait(space: 2, after: ticket, upTo: .seconds(3_600)) }
        try await Task.sleep(for: .milliseconds(50))
        signal.notify(space: 1)
        signal.notify(space: 2)
        let woken = try await Self.within(60, "a waiter of space 2") { await waiter.value; return true }
        #expect(woken == true)

        // Cancellation and the timeout end a wait too.
        let cancelled = Task { await signal.wait(space: 3, after: signal.ticket(3), upTo: .seconds(3_600)) }
        cancelled.cancel()
        #expect(try await Self.within(60, "a cancelled wait") { await cancelled.value; return true } == true)
        #expect(try await Self.within(60, "a wait that times out") {
            await signal.wait(space: 3, after: signal.ticket(3), upTo: .milliseconds(10))
            return true
        } == true)
    }

    @Test func aPushNotifiesTheListenersOfEveryInstance() async throws {
        let cluster = try PostgresCluster.shared()
        let url = try #require(URLComponents(string: try cluster.makeDatabase()))
        let configuration = PostgresClient.Configuration(host: url.host ?? "127.0.0.1", port: url.port ?? 5432, username: url.user ?? "sluice",
                                                         password: nil, database: String(url.path.dropFirst()), tls: .disable)
        let client = PostgresClient(configuration: configuration)
        let running = Task { await client.run() }
        defer { running.cancel() }
        let storage = SyncStorage(client: client)
        try await storage.prepare()
        let token = try await storage.addToken(space: "live")
        let space = try #require(try await storage.access(forToken: token)?.space)

        // Two instances' signals, each with its own listener on the one database.
        let signals = [HeadSignal(), HeadSignal()]
        let listeners = signals.map { signal in Task { try await HeadListener(storage: storage, signal: signal).run() } }
        defer { listeners.forEach { $0.cancel() } }
        for signal in signals {
            let listening = try await Self.within(60, "the listener connecting") {
                while !signal.isListening { try await Task.sleep(for: .milliseconds(10)) }
                return true
            }
            #expect(listening == true)
        }
        let tickets = signals.map { $0.ticket(space) }
        let push = PushRequest(device: "device-a", base: 0, transactions: [
            SyncTransaction(device: "device-a", local: 1, clock: HybridClock(rawValue: 1),
                            changes: [SyncChange(table: "person", id: "p1", op: .insert, values: ["first_name": .text("Ada")])]),
        ])
        guard case .success(let response) = try await storage.push(push, space: space, token: "listener-test", policy: .init(maximumSkew: .seconds(60))) else {
            Issue.record("the push was refused")
            return
        }
        #expect(response.head == 1)
        for (signal, ticket) in zip(signals, tickets) {
            let woken = try await Self.within(60, "the notification") {
                await signal.wait(space: space, after: ticket, upTo: .seconds(3_600))
                return signal.ticket(space)
            }
            #expect(woken == ticket + 1)
        }
    }

    @Test func aFollowingDeviceGetsACommitFromItsWaitingPull() async throws {
        // B follows with pulls that wait: a commit on A reaches B as the page its long poll
        // answers, with no /v1/wait and no second pull. A transport that cannot wait (an
        // older service's answer, or one's own transport: the default) still follows.
        let space = try SyncSpace()
        let a = try space.device()
        try await a.client.sync()
        for waits in [true, false] {
            let database = TemporaryDatabase()
            let store = try database.store()
            try store.migrate(DemoSchema.migrations)
            let calls = CountingTransport(base: HTTPSyncTransport(server: space.service.url, token: space.token), waits: waits)
            let b = try SyncClient(store: store, transport: calls, configuration: SyncConfiguration(tables: DemoSchema.syncedTables))
            try await b.sync()
            let follower = Task { try await b.follow() }
            defer { follower.cancel() }
            // Until B's long poll is waiting for what comes after the history's head, and the
            // sync `follow` starts with has pulled and been answered: under load its pull, sent
            // before A's commit and answered after it, brought the commit with no pull after
            // this point (found in a Server run beside a release build).
            let head = try space.head()
            _ = try await Self.within(60, "B waiting") {
                while !calls.log.withLock({ log in
                    log.contains { $0 == "pull waiting since \(head)" || $0 == "wait since \(head)" } && log.contains("pull since \(head)")
                }) || calls.pullsInFlight.withLock({ $0 }) > 0 {
                    try await Task.sleep(for: .milliseconds(10))
                }
                return true
            }
            // What B asks from here on: the long poll in flight answers A's commit.
            let before = calls.log.withLock { $0.count }
            _ = try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Live', ?)", [.text("\(waits)")])
            try await a.client.sync()
            let arrived = try await Self.within(60, "B getting A's commit") {
                while try await store.read({ db in try db.fetchRows(sql: "SELECT 1 FROM person WHERE first_name = 'Live' AND last_name = ?", arguments: [.text("\(waits)")]) }).isEmpty {
                    try await Task.sleep(for: .milliseconds(10))
                }
                return true
            }
            #expect(arrived == true)
            let log = calls.log.withLock { Array($0[before...]) }
            // The page the long poll answered is the one applied: no pull from the head (a
            // device that waited for the head pulls after it).
            #expect(log.contains("pull since \(head)") == !waits, "\(log)")
            #expect(!log.contains { $0.hasPrefix(waits ? "wait" : "pull waiting") }, "\(log)")
        }
    }

    @Test func aDevicesOwnPushLeavesItsWaitingPullWaiting() async throws {
        // A device's own push ended its long poll (the head had passed its `since`), so the
        // service read and sent a page of what the device had just sent, beside the other
        // devices' pages, and the device synced again for nothing: the poll waits on for
        // another device's commit.
        let space = try SyncSpace()
        let b = try space.device()
        let database = TemporaryDatabase()
        let store = try database.store()
        try store.migrate(DemoSchema.migrations)
        let calls = CountingTransport(base: HTTPSyncTransport(server: space.service.url, token: space.token), waits: true)
        let a = try SyncClient(store: store, transport: calls, configuration: SyncConfiguration(tables: DemoSchema.syncedTables))
        try await a.sync()
        try await b.client.sync()
        let follower = Task { try await a.follow() }
        defer { follower.cancel() }
        let head = try space.head()
        _ = try await Self.within(60, "A waiting") {
            while !calls.log.withLock({ $0.contains("pull waiting since \(head)") }) { try await Task.sleep(for: .milliseconds(10)) }
            return true
        }
        // A commits; its follow() pushes it.
        try await store.write { db in try db.execute(sql: "INSERT INTO person (first_name, last_name) VALUES ('Own', 'A')") }
        _ = try await Self.within(60, "A's push") {
            while try space.head() == head { try await Task.sleep(for: .milliseconds(10)) }
            return true
        }
        // Longer than the service's one-second re-read of the head.
        try await Task.sleep(for: .milliseconds(2_500))
        #expect(calls.log.withLock { $0.filter { $0.hasPrefix("pull waiting") } } == ["pull waiting since \(head)"])
        // B's commit ends the wait: A gets B's row.
        _ = try b.sql("INSERT INTO person (first_name, last_name) VALUES ('Other', 'B')")
        try await b.client.sync()
        let arrived = try await Self.within(60, "A getting B's commit") {
            while try await store.read({ db in try db.fetchRows(sql: "SELECT 1 FROM person WHERE first_name = 'Other'") }).isEmpty {
                try await Task.sleep(for: .milliseconds(10))
            }
            return true
        }
        #expect(arrived == true)
    }

    @Test func cancellingFollowEndsIt() async throws {
        // Cancelling a client's follow() while its requests are in flight (a long poll, a
        // pull) ends it: cancelling Foundation's async URLSession request could deadlock.
        let space = try SyncSpace()
        let a = try space.device()
        let b = try space.device()
        for round in 0..<6 {
            let followers = [Task { try await a.client.follow() }, Task { try await b.client.follow() }]
            _ = try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Round', ?)", [.text("\(round)")])
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...300)))
            followers.forEach { $0.cancel() }
            for follower in followers {
                let ended = try await Self.within(60, "a cancelled follow() (round \(round))") {
                    _ = try? await follower.value
                    return true
                }
                #expect(ended == true)
            }
        }
        try await a.client.sync()
        try await b.client.sync()
        #expect(try b.rows("SELECT count(*) FROM person") == ["6"])
    }

    @Test func followReportsErrorsAndKeepsGoingUntilTheTokenIsRevoked() async throws {
        // Between the device and the service, something answers requests with an HTML page
        // (a captive portal's 200 OK): follow() reports .error and retries until everything is
        // pushed. A revoked token (401) ends it, its change still pending.
        let space = try SyncSpace()
        let proxy = try DroppingProxy(upstream: space.service.url)
        let a = try Device(server: proxy.url, token: space.token)
        let errors = Locked(0)
        let watcher = Task {
            for await snapshot in a.client.updates {
                if case .error(let message) = snapshot.status, message.contains("protocol violation") { errors.withLock { $0 += 1 } }
            }
        }
        defer { watcher.cancel() }
        let outcome = Locked<String?>(nil)
        proxy.garbleNextResponses(4)
        let follower = Task {
            do {
                try await a.client.follow()
                outcome.withLock { $0 = "returned" }
            } catch SyncClientError.unauthorized {
                outcome.withLock { $0 = "unauthorized" }
            } catch {
                outcome.withLock { $0 = "\(error)" }
            }
        }
        defer { follower.cancel() }
        for index in 0..<5 {
            _ = try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Limited', ?)", [.text("\(index)")])
            try await Task.sleep(for: .milliseconds(30))
        }
        let pushed = try await Self.within(60, "pushing five people through the garbled answers") {
            while try await a.client.pendingChangeCount() > 0 || SyncContent.ofService(space.postgres).count < 5 {
                try await Task.sleep(for: .milliseconds(100))
            }
            return true
        }
        #expect(pushed == true)
        #expect(errors.withLock { $0 } > 0, "no .error status was reported")
        #expect(outcome.withLock { $0 } == nil, "follow() ended: \(outcome.withLock { $0 } ?? "")")
        try SyncServiceProcess.revokeToken(postgres: space.postgres, space.token)
        _ = try a.sql("INSERT INTO person (first_name, last_name) VALUES ('After', 'Revoke')")
        let ended = try await Self.within(60, "follow() with a revoked token") {
            while outcome.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(50)) }
            return true
        }
        #expect(ended == true)
        #expect(outcome.withLock { $0 } == "unauthorized")
        #expect(try await a.client.pendingChangeCount() == 1)
    }
}

/// The HTTP transport, its calls logged (`pull since N`, `pull waiting since N`, `wait since
/// N`); with `waits` false, it cannot wait in a pull, as an older service's answers say.
struct CountingTransport: SyncTransport {
    let base: HTTPSyncTransport
    let waits: Bool
    let log = Locked<[String]>([])
    /// Pulls (not long polls) sent and not answered yet.
    let pullsInFlight = Locked(0)

    func push(_ push: PushRequest) async throws -> SyncPushOutcome { try await base.push(push) }
    func pull(since: Int64, limit: Int?, device: String?) async throws -> PullResponse {
        log.withLock { $0.append("pull since \(since)") }
        pullsInFlight.withLock { $0 += 1 }
        defer { pullsInFlight.withLock { $0 -= 1 } }
        return try await base.pull(since: since, limit: limit, device: device)
    }
    func pull(since: Int64, device: String?, waiting timeout: Int) async throws -> PullResponse? {
        guard waits else { return nil }
        log.withLock { $0.append("pull waiting since \(since)") }
        return try await base.pull(since: since, device: device, waiting: timeout)
    }
    func wait(since: Int64, timeout: Int) async throws -> Int64 {
        log.withLock { $0.append("wait since \(since)") }
        return try await base.wait(since: since, timeout: timeout)
    }
    func rows(_ rows: RowsRequest) async throws -> RowsResponse { try await base.rows(rows) }
    func share(_ share: ShareRequest) async throws -> ShareResponse { try await base.share(share) }
    func attachmentStatus(_ attachment: SyncAttachment) async throws -> AttachmentStatus? { try await base.attachmentStatus(attachment) }
    func upload(_ attachment: SyncAttachment, chunk index: Int, _ bytes: Data) async throws -> AttachmentStatus {
        try await base.upload(attachment, chunk: index, bytes)
    }
    func download(_ attachment: SyncAttachment, chunk index: Int) async throws -> Data { try await base.download(attachment, chunk: index) }
    func updateBearer(_ token: String) { base.updateBearer(token) }
}
