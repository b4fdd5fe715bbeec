import Foundation
import SluiceSyncConformance
import SluiceDemo
import SluiceSyncClient
import SluiceTestSupport
import Sluice
import Testing

/// Pushes and pulls interrupted at every layer: the device process killed, the connection
/// cut after the service committed, the service killed and restarted, PostgreSQL
/// restarted. Afterwards every device and the service hold the same rows, nothing is
/// pending, and the service's history holds each device transaction once.
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncFaultTests {
    /// How many transactions the service's history holds, and how many distinct (device, local) pairs.
    static func history(_ postgres: String, cluster: PostgresCluster? = nil) throws -> (count: Int, distinct: Int) {
        let database = String(URLComponents(string: postgres)?.path.dropFirst() ?? "")
        let text = try (cluster ?? PostgresCluster.shared()).psql(database, "SELECT count(*) || ' ' || count(DISTINCT (device, local)) FROM sluice_txn")
        let parts = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        return (parts.first ?? -1, parts.last ?? -1)
    }

    /// Writes `count` transactions of one person each (and a package for every third).
    static func write(_ count: Int, into store: Store, tag: String) throws {
        for index in 0..<count {
            try store.write { db in
                try db.execute(sql: "INSERT INTO person (first_name, last_name, age) VALUES (?, ?, ?)",
                               arguments: [.text("\(tag)\(index)"), .text(tag), .integer(Int64(index % 90))])
                if index % 3 == 0 {
                    try db.execute(sql: "INSERT INTO package (recipient_id, created_at) VALUES (?, '2026-11-22')", arguments: [.integer(db.lastInsertedRowID)])
                }
            }
        }
    }

    /// How long this machine takes, now, to start the command and open a store: the unit
    /// of the kill pauses, so that they fall within the work on a fast machine and a loaded one.
    static func startUpTime(_ path: String) throws -> Duration {
        let clock = ContinuousClock()
        let started = clock.now
        for _ in 0..<3 { _ = try CommandRunner().run(["sync", "status", "--db", path]) }
        return (clock.now - started) / 3
    }

    /// Runs `sluice sync` on `path` and kills it with SIGKILL after a random pause, `times`
    /// times (some runs finish first); then once to completion. Returns how many runs were killed.
    /// The pauses run from a fifth of the start-up time to 1.6 times it: from before the
    /// store is open to after the request (a run's work takes about as long as its start-up).
    static func syncKilling(_ path: String, space: SyncSpace, times: Int, random: inout some RandomNumberGenerator) throws -> Int {
        var killed = 0
        let unit = try startUpTime(path)
        for _ in 0..<times {
            let process = Process()
            process.executableURL = CommandRunner.executable(named: "sluice")
            process.arguments = ["sync", "--db", path, "--server", space.service.url.absoluteString, "--token", space.token]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let seconds = Double(unit.components.seconds) + Double(unit.components.attoseconds) / 1e18
            Thread.sleep(forTimeInterval: seconds * Double.random(in: 0.2...1.6, using: &random))
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                killed += 1
            }
            process.waitUntilExit()
        }
        let result = try CommandRunner().run(["sync", "--db", path, "--server", space.service.url.absoluteString, "--token", space.token])
        #expect(result.status == 0, "\(result)")
        return killed
    }

    @Test func deviceKilledMidPushAndMidPull() async throws {
        let space = try SyncSpace()
        let folder = CommandRunner()
        let a = folder.path("a.sqlite")
        let b = folder.path("b.sqlite")
        do {
            let store = try Store(path: a)
            try store.migrate(DemoSchema.migrations)
            try Self.write(300, into: store, tag: "A")
        }
        var random = SystemRandomNumberGenerator()
        // A's push: 300 transactions, killed at random points (before, during, after the request).
        let killedPushing = try Self.syncKilling(a, space: space, times: 6, random: &random)
        // B: a new device, killed while creating its store and while applying A's transactions one by one.
        let killedPulling = try Self.syncKilling(b, space: space, times: 6, random: &random)
        // B writes between kills (the sqlite3 shell: another program; the client's triggers log it).
        try SQLiteShell.run(path: b, "INSERT INTO person (first_name, last_name) VALUES ('from', 'shell');")
        _ = try Self.syncKilling(b, space: space, times: 3, random: &random)
        _ = try Self.syncKilling(a, space: space, times: 0, random: &random)
        #expect(killedPushing + killedPulling > 0, "no run was killed: the pauses were too long for this machine")
        let storeA = try Store(path: a)
        let storeB = try Store(path: b)
        let content = try SyncContent.of(storeA)
        #expect(content.count == 300 + 100 + 1)
        #expect(try SyncContent.of(storeB) == content)
        #expect(try SyncContent.ofService(space.postgres) == content)
        #expect(try await storeB.read { db in try db.fetchCount(Person.self) } == 301)
        let history = try Self.history(space.postgres)
        #expect(history.count == history.distinct)
        let configuration = SyncConfiguration(tables: DemoSchema.syncedTables)
        #expect(try SyncClient.savedState(of: storeA, configuration: configuration)?.pendingChangeCount == 0)
        #expect(try SyncClient.savedState(of: storeB, configuration: configuration)?.pendingChangeCount == 0)
    }

    @Test func droppedConnectionsAfterTheServiceCommitted() async throws {
        let space = try SyncSpace()
        let proxy = try DroppingProxy(upstream: space.service.url)
        let a = try Device(server: proxy.url, token: space.token)
        let b = try space.device()
        try Self.write(20, into: a.store, tag: "A")
        // The push reaches the service and commits; its answer never arrives.
        proxy.dropNextResponses(1)
        await #expect(throws: SyncClientError.self) { try await a.client.sync() }
        #expect(proxy.dropped == 1)
        #expect(try await a.client.pendingChangeCount() > 0)
        try await a.client.sync()
        #expect(try await a.client.pendingChangeCount() == 0)
        // A pull whose answer is cut, then a push whose answer is cut, in one sync each.
        try Self.write(5, into: b.store, tag: "B")
        try await b.client.sync()
        try Self.write(5, into: a.store, tag: "A2")
        for _ in 0..<2 {
            proxy.dropNextResponses(1)
            _ = try? await a.client.sync()
        }
        try await a.client.sync()
        try await b.client.sync()
        #expect(try a.content() == b.content())
        #expect(try SyncContent.ofService(space.postgres) == a.content())
        #expect(try a.rows("SELECT count(*) FROM person") == ["30"])
        let history = try Self.history(space.postgres)
        #expect(history.count == history.distinct)
    }

    /// Under load the service answers a large push 503 when its database deadline passes, and
    /// the push goes on and commits: a one-shot sync waits as the answer says and sends it again
    /// (the service skips what it took), instead of failing while the rows are already there
    /// (a first `sluice sync` of 151,010 rows exited 1 after 76 s while another device pulled them all).
    @Test func aPushAnsweredUnavailableAfterTheServiceTookItIsSentAgain() async throws {
        let space = try SyncSpace()
        let proxy = try DroppingProxy(upstream: space.service.url)
        let a = try Device(server: proxy.url, token: space.token)
        let b = try space.device()
        try Self.write(20, into: a.store, tag: "A")
        proxy.answerUnavailableToNextPushes(2)
        let report = try await a.client.sync()
        #expect(report.pushed > 0)
        #expect(try await a.client.pendingChangeCount() == 0)
        try await b.client.sync()
        #expect(try b.rows("SELECT count(*) FROM person") == ["20"])
        let history = try Self.history(space.postgres)
        #expect(history.count == history.distinct, "each transaction stored once")
    }

    @Test func serviceKilledAndRestartedMidRequest() async throws {
        let space = try SyncSpace()
        let port = space.service.url.port ?? 0
        let a = try space.device()
        let b = try space.device()
        let followers = [Task { try await a.client.follow() }, Task { try await b.client.follow() }]
        defer { followers.forEach { $0.cancel() } }
        var service = space.service
        for round in 0..<4 {
            try Self.write(40, into: a.store, tag: "A\(round)-")
            try Self.write(10, into: b.store, tag: "B\(round)-")
            try await Task.sleep(for: .milliseconds(Int.random(in: 5...150)))
            service.kill()
            try await Task.sleep(for: .milliseconds(100))
            service = try SyncServiceProcess(postgres: space.postgres, port: port)
        }
        try await Self.converge([a, b], postgres: space.postgres)
        #expect(try a.rows("SELECT count(*) FROM person") == ["200"])
        service.stop()
    }

    @Test(.enabled(if: !PostgresCluster.external, "SLUICE_TEST_POSTGRES: a server the tests did not start is not restarted"))
    func postgresRestartedWhileDevicesSync() async throws {
        let cluster = try PostgresCluster.dedicated()
        let postgres = try cluster.makeDatabase()
        let token = try SyncServiceProcess.addToken(postgres: postgres, space: "restart")
        let service = try SyncServiceProcess(postgres: postgres)
        defer { service.stop() }
        let a = try Device(server: service.url, token: token)
        let b = try Device(server: service.url, token: token)
        let followers = [Task { try await a.client.follow() }, Task { try await b.client.follow() }]
        defer { followers.forEach { $0.cancel() } }
        for round in 0..<3 {
            try Self.write(30, into: a.store, tag: "A\(round)-")
            try Self.write(10, into: b.store, tag: "B\(round)-")
            try await Task.sleep(for: .milliseconds(Int.random(in: 5...100)))
            try cluster.restart()
        }
        try await Self.converge([a, b], postgres: postgres, cluster: cluster)
        #expect(try b.rows("SELECT count(*) FROM person") == ["120"])
    }

    @Test func twoServiceInstancesOnOneDatabase() async throws {
        let space = try SyncSpace()
        let second = try SyncServiceProcess(postgres: space.postgres)
        defer { second.stop() }
        let a = try space.device()
        let b = try Device(server: second.url, token: space.token)
        let c = try space.device()
        // B follows through the second instance: A's push through the first reaches it.
        let follower = Task { try await b.client.follow() }
        defer { follower.cancel() }
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ada', 'Lovelace')")
        try await a.client.sync()
        try await Self.until { try b.rows("SELECT last_name FROM person") == ["Lovelace"] }
        try b.sql("UPDATE person SET city = 'London'")
        try await Self.until { try await b.client.pendingChangeCount() == 0 }
        try await c.client.sync()
        try await a.client.sync()
        #expect(try c.rows("SELECT first_name, city FROM person") == ["Ada|London"])
        try await Self.converge([a, b, c], postgres: space.postgres)
    }

    /// Waits until `condition` holds (20 s at most).
    static func until(_ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while try await !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("the condition did not hold within 20 s")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Waits (150 s at most) until every device and the service hold the same rows and nothing is pending.
    static func converge(_ devices: [Device], postgres: String, cluster: PostgresCluster? = nil) async throws {
        // Following devices that met errors during a fault wait up to 30 s between retries.
        let deadline = ContinuousClock.now + .seconds(150)
        while true {
            var pending = 0
            for device in devices { pending += try await device.client.pendingChangeCount() }
            let contents = try devices.map { try $0.content() }
            if pending == 0, contents.allSatisfy({ $0 == contents[0] }) {
                let service = try cluster.map { try SyncContent.ofService(postgres, cluster: $0) } ?? SyncContent.ofService(postgres)
                if service == contents[0] { break }
            }
            guard ContinuousClock.now < deadline else {
                var quarantined: [String] = []
                for device in devices { quarantined += try await device.client.quarantined().map { "\($0.transaction.seq ?? 0): \($0.error)" } }
                let service = (try? cluster.map { try SyncContent.ofService(postgres, cluster: $0) } ?? SyncContent.ofService(postgres)) ?? []
                let differences = contents.enumerated().map { index, content in
                    "device \(index): only here \(Set(content).subtracting(service).sorted()), missing \(Set(service).subtracting(content).sorted())"
                }
                Issue.record("devices did not converge within 150 s (pending \(pending); \(contents.map(\.count)) rows; quarantined: \(quarantined)); against the service: \(differences)")
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let history = try history(postgres, cluster: cluster)
        #expect(history.count == history.distinct)
    }
}
