import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JWTKit
@testable import SluiceSync
import SluiceSyncProtocol
import SluiceTestSupport
import Testing

/// Removing a member ends every access at once, whatever the credential: its tokens, its
/// JWTs (by subject) and its long polls under way; JWTs name only the configured algorithm.
@Suite(.serialized, .timeLimit(.minutes(3)), .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncAccessTests {
    /// A request's status and body.
    static func request(_ space: SyncSpace, _ path: String, bearer: String, method: String = "GET", body: Data? = nil) async throws -> (Int, String) {
        var request = URLRequest(url: URL(string: path, relativeTo: space.service.url) ?? space.service.url)
        request.httpMethod = method
        request.httpBody = body
        request.timeoutInterval = 60
        request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization")
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    static func push(_ space: SyncSpace, bearer: String, device: String, name: String) async throws -> (Int, String) {
        let push = PushRequest(device: device, base: 0, transactions: [
            SyncTransaction(device: device, local: 1, clock: HybridClock(date: Date()), changes: [
                SyncChange(table: "person", id: "\(device)-1", op: .insert, values: ["first_name": .text(name), "last_name": .text("L")]),
            ]),
        ])
        return try await request(space, "v1/push", bearer: bearer, method: "POST", body: try JSONEncoder().encode(push))
    }

    @Test func removingAMemberEndsItsTokensJWTsAndOpenWaits() async throws {
        let secretFile = FileManager.default.temporaryDirectory.appendingPathComponent("jwt-\(UUID().uuidString)").path
        #expect(FileManager.default.createFile(atPath: secretFile, contents: Data(SyncJWTTests.secret.utf8)))
        defer { try? FileManager.default.removeItem(atPath: secretFile) }
        let space = try SyncSpace(serviceArguments: ["--jwt-secret-file", secretFile])
        let tool = CommandRunner.executable(named: "sluice-sync").path
        let shared = try PostgresCluster.run(tool, ["share", "--postgres", space.postgres, "--space", "test", "--user", "carol", "--role", "editor"])
        let carol = try #require(shared.split(separator: "\n").last.map(String.init))
        let dave = try await SyncJWTTests.sign(.init(subject: "dave", expiration: Date().addingTimeInterval(3_600), spaces: ["test": .editor]))
        #expect(try await Self.request(space, "v1/pull", bearer: carol).0 == 200)
        #expect(try await Self.request(space, "v1/pull", bearer: dave).0 == 200)
        #expect(try await Self.push(space, bearer: dave, device: "dave-phone", name: "Dave").0 == 200)

        // Waits opened before the removal end with 401 soon after it, not with the next head.
        let head = try space.head()
        let waits = [carol, dave].map { bearer in
            Task { try await Self.request(space, "v1/wait?since=\(head)&timeout=20", bearer: bearer) }
        }
        try await Task.sleep(for: .milliseconds(500))
        let started = ContinuousClock.now
        for user in ["carol", "dave"] {
            let output = try PostgresCluster.run(tool, ["member", "remove", "--postgres", space.postgres, "--space", "test", "--user", user])
            #expect(output.contains("open nothing there"), "\(output)")
        }
        for (wait, user) in zip(waits, ["carol", "dave"]) {
            let (status, body) = try await wait.value
            #expect(status == 401, "\(user)'s open wait: \(status) \(body)")
            #expect(ContinuousClock.now - started < .seconds(5), "\(user)'s wait ended at the removal, not at its timeout")
        }

        // Every request of the removed member's JWT is refused, naming why; its token too.
        for (path, method) in [("v1/pull", "GET"), ("v1/wait?since=0&timeout=1", "GET")] {
            let (status, body) = try await Self.request(space, path, bearer: dave, method: method)
            #expect(status == 401 && body.contains("member 'dave' was removed"), "\(path): \(status) \(body)")
        }
        let (pushed, pushBody) = try await Self.push(space, bearer: dave, device: "dave-phone-2", name: "Late")
        #expect(pushed == 401, "\(pushBody)")
        try await Task.sleep(for: .milliseconds(2_100))   // past the instance's memory of tokens
        #expect(try await Self.request(space, "v1/pull", bearer: carol).0 == 401)
        #expect(try space.head() == head, "nothing pushed after the removal")

        // Shared again, the member's JWTs open the space again.
        _ = try PostgresCluster.run(tool, ["share", "--postgres", space.postgres, "--space", "test", "--user", "dave", "--role", "viewer"])
        #expect(try await Self.request(space, "v1/pull", bearer: dave).0 == 200)
    }

    /// A JWT signed with the service's HS256 secret whose header names another algorithm
    /// is refused (the key collection would verify it with its one key regardless).
    @Test func jwtsNamingAnotherAlgorithmAreRefused() async throws {
        let secretFile = FileManager.default.temporaryDirectory.appendingPathComponent("jwt-\(UUID().uuidString)").path
        #expect(FileManager.default.createFile(atPath: secretFile, contents: Data(SyncJWTTests.secret.utf8)))
        defer { try? FileManager.default.removeItem(atPath: secretFile) }
        let space = try SyncSpace(serviceArguments: ["--jwt-secret-file", secretFile])
        let claims = JWTAuthentication.Claims(subject: "erin", expiration: Date().addingTimeInterval(3_600), spaces: ["test": .owner])
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: SyncJWTTests.secret), digestAlgorithm: .sha256)
        #expect(try await Self.request(space, "v1/pull", bearer: try await keys.sign(claims)).0 == 200, "HS256 opens it")
        for algorithm in ["RS256", "HS512", "none"] {
            let token = try await keys.sign(claims, header: ["alg": .string(algorithm)])
            #expect(JWTAuthentication.headerAlgorithm(token) == algorithm, "the header names \(algorithm)")
            let (status, body) = try await Self.request(space, "v1/pull", bearer: token)
            #expect(status == 401 && body.contains("algorithm"), "\(algorithm): \(status) \(body)")
        }
    }
}
