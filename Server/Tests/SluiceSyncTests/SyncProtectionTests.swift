import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// The service protects its PostgreSQL: bad tokens and rate-limited requests cost no query,
/// bodies in flight are held to a budget (503 with Retry-After past it), replayed pushes
/// are refused, and the connection to PostgreSQL can require TLS.
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncProtectionTests {
    /// Transactions PostgreSQL has counted in the space's database (statistics are flushed
    /// by each backend at most once a second: wait before reading).
    static func transactions(_ space: SyncSpace) throws -> Int {
        let text = try space.psql("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()")
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    static func get(_ space: SyncSpace, token: String) async throws -> (Int, String?) {
        var request = URLRequest(url: space.service.url.appendingPathComponent("v1/pull"))
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let (_, response) = try await URLSession.shared.data(for: request)
        let http = response as? HTTPURLResponse
        return (http?.statusCode ?? 0, http?.value(forHTTPHeaderField: "Retry-After"))
    }

    @Test func badTokensAreTurnedAwayBeforeTheDatabase() async throws {
        let space = try SyncSpace()
        try await Task.sleep(for: .milliseconds(1_500))
        let before = try Self.transactions(space)
        let started = ContinuousClock.now
        // 1,500 requests with one bad token, 500 with made-up ones, eight at a time.
        var statuses: [Int: Int] = [:]
        var retryAfter = 0
        for round in 0..<250 {
            let answers = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                for index in 0..<8 {
                    let token = index < 6 ? "slt_bad" : "slt_random_\(round)_\(index)"
                    group.addTask { try await Self.get(space, token: token) }
                }
                var answers: [(Int, String?)] = []
                for try await answer in group { answers.append(answer) }
                return answers
            }
            for (status, retry) in answers {
                statuses[status, default: 0] += 1
                if status == 429, retry == "1" { retryAfter += 1 }
            }
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        #expect(Set(statuses.keys).isSubset(of: [401, 429]), "\(statuses)")
        // How many are 429 depends on the machine's pace; each says when to retry.
        #expect(retryAfter == statuses[429] ?? 0, "\(statuses), \(retryAfter) with Retry-After")
        try await Task.sleep(for: .milliseconds(1_500))
        let spent = try Self.transactions(space) - before
        // Lookups that find nothing: 100 at once, then 20 a second from one address; the
        // repeated bad token is remembered for two seconds at a time (plus psql's own).
        let allowed = 100 + Int(20 * seconds) + Int(seconds / 2) + 5
        #expect(spent <= allowed, "\(spent) database transactions for 2,000 requests with bad tokens in \(seconds) s (at most \(allowed))")
        // The space's own token still works (its address has lookups again).
        try await Task.sleep(for: .seconds(1))
        let device = try space.device()
        try device.sql("INSERT INTO person (first_name, last_name) VALUES ('Ada', 'A')")
        try await device.client.sync()
        #expect(try await device.client.pendingChangeCount() == 0)
    }

    @Test func bodiesInFlightAreHeldToABudget() async throws {
        let space = try SyncSpace(serviceArguments: ["--max-body-bytes", "30000000", "--max-inflight-bytes", "40000000"])
        // A push that announces 25 MB and sends them slowly holds its share of the budget...
        let port = UInt16(space.service.url.port ?? 0)
        let slow = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        // Closed once, below: a second close would close whatever file took the number since
        // (a store's WAL in a test running beside this one: a disk I/O error at its COMMIT).
        var open = true
        defer { if open { close(slow) } }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(slow, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(connected == 0)
        let head = "POST /v1/push HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(space.token)\r\nContent-Type: application/json\r\nContent-Length: 25000000\r\n\r\n{\"device\":"
        _ = head.withCString { send(slow, $0, strlen($0), 0) }
        try await Task.sleep(for: .milliseconds(500))
        // ...so another 25 MB push is turned away before its body is read, with Retry-After.
        var request = URLRequest(url: space.service.url.appendingPathComponent("v1/push"))
        request.httpMethod = "POST"
        request.httpBody = Data(repeating: UInt8(ascii: " "), count: 25_000_000)
        request.setValue("Bearer \(space.token)", forHTTPHeaderField: "Authorization")
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as? HTTPURLResponse
        #expect(http?.statusCode == 503 && http?.value(forHTTPHeaderField: "Retry-After") == "1", "\(String(decoding: data, as: UTF8.self))")
        #expect(String(decoding: data, as: UTF8.self).contains("saturated"))
        // Small pushes still fit; once the slow one is gone, so does a large one.
        let device = try space.device()
        try device.sql("INSERT INTO person (first_name, last_name) VALUES ('Ada', 'A')")
        try await device.client.sync()
        close(slow)
        open = false
        try await Task.sleep(for: .milliseconds(500))
        let (_, again) = try await URLSession.shared.data(for: request)
        #expect((again as? HTTPURLResponse)?.statusCode == 400)
    }

    @Test func aReplayedPushIsRefused() async throws {
        let space = try SyncSpace()
        let original = SyncTransaction(device: "tablet", local: 1, clock: HybridClock(date: Date()), changes: [
            SyncChange(table: "person", id: "p1", op: .insert, values: ["first_name": .text("Ada"), "last_name": .text("A"), "city": .text("Oslo")]),
        ])
        #expect(try await SyncRequests.push(PushRequest(device: "tablet", base: space.head(), transactions: [original]), to: space, token: space.token).0 == 200)
        let device = try space.device()
        try await device.client.sync()
        try device.sql("UPDATE person SET city = 'Riga'")
        try await device.client.sync()
        // The tablet's push again, under a new device id, on the current head: it would put
        // Oslo back.
        var replay = original
        replay.device = "intruder"
        let answer = try await SyncRequests.push(PushRequest(device: "intruder", base: space.head(), transactions: [replay]), to: space, token: space.token)
        #expect(answer.0 == 409 && answer.1.contains("replay"), "\(answer)")
        try await device.client.sync()
        #expect(try device.rows("SELECT city FROM person") == ["Riga"])
        #expect(try SyncRequests.storedRows(space, table: "person").first?.contains(#"city={"t": "Riga"}"#) == true)
    }

    @Test func theConnectionToPostgreSQLCanRequireTLS() throws {
        let cluster = try PostgresCluster.shared()
        let postgres = try cluster.makeDatabase()
        let binary = CommandRunner.executable(named: "sluice-sync").path
        // The tests' server has no TLS: `require` refuses it, `prefer` and `disable` go plain.
        do {
            _ = try PostgresCluster.run(binary, ["token", "add", "--postgres", postgres, "--space", "s", "--postgres-tls", "require"])
            Issue.record("--postgres-tls require connected to a server without TLS")
        } catch {
            #expect("\(error)".lowercased().contains("ssl") || "\(error)".lowercased().contains("tls"), "\(error)")
        }
        for mode in ["prefer", "disable"] {
            let output = try PostgresCluster.run(binary, ["token", "add", "--postgres", postgres, "--space", "s", "--postgres-tls", mode])
            #expect(output.contains("slt_"), "\(mode): \(output)")
        }
        do {
            _ = try PostgresCluster.run(binary, ["token", "add", "--postgres", postgres, "--space", "s", "--postgres-tls", "sometimes"])
            Issue.record("--postgres-tls sometimes was accepted")
        } catch {
            #expect("\(error)".contains("require"), "\(error)")
        }
    }
}
