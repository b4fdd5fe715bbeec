import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JWTKit
import SluiceDemo
import SluiceSync
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// JWTs an app's own backend signs open spaces with the roles their claims name, beside
/// tokens: a member's devices keep their ids across refreshed JWTs; expired, forged or
/// ambiguous JWTs are refused with a clear error.
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncJWTTests {
    static let secret = "a-shared-secret-of-the-apps-backend-0123456789"

    static func sign(_ claims: JWTAuthentication.Claims, secret: String = Self.secret) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return try await keys.sign(claims)
    }

    /// A pull's status and error code with this bearer (and space header).
    static func pull(_ space: SyncSpace, bearer: String, named: String? = nil) async throws -> (Int, String) {
        var request = URLRequest(url: space.service.url.appendingPathComponent("v1/pull"))
        request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization")
        if let named { request.setValue(named, forHTTPHeaderField: "Sluice-Space") }
        let (data, response) = try await URLSession.shared.data(for: request)
        let body = try? JSONDecoder().decode(SyncErrorBody.self, from: data)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, body.map { "\($0.error): \($0.message)" } ?? "")
    }

    @Test func jwtsOpenSpacesWithTheirRoles() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("jwt-\(UUID().uuidString)").path
        #expect(FileManager.default.createFile(atPath: file, contents: Data(Self.secret.utf8)))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let space = try SyncSpace(serviceArguments: ["--jwt-secret-file", file])
        let hour = Date().addingTimeInterval(3_600)
        let alice = try await Self.sign(.init(subject: "alice", expiration: hour, spaces: ["team": .editor, "family": .viewer]))
        let bob = try await Self.sign(.init(subject: "bob", expiration: hour, spaces: ["team": .viewer]))
        let a = try Device(server: space.service.url, token: alice) { $0.space = "team" }
        let b = try Device(server: space.service.url, token: bob)   // one space: no header needed
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Alice', 'A')")
        try await a.client.sync()
        try await b.client.sync()
        #expect(try b.rows("SELECT first_name FROM person") == ["Alice"])
        try b.sql("INSERT INTO person (first_name, last_name) VALUES ('Bob', 'B')")
        do {
            _ = try await b.client.sync()
            Issue.record("a viewer's push was accepted")
        } catch SyncClientError.rejected(let status, let body) {
            #expect(status == 403 && body.message.contains("member 'bob' is a viewer"), "\(body)")
        }

        // The JWT expires: 401; the app hands the client a refreshed one, and the same
        // device goes on under the same id, with no identity conflict.
        await a.client.updateToken(try await Self.sign(.init(subject: "alice", expiration: Date().addingTimeInterval(-1), spaces: ["team": .editor])))
        try a.sql("UPDATE person SET city = 'Oslo'")
        do {
            _ = try await a.client.sync()
            Issue.record("an expired JWT was accepted")
        } catch SyncClientError.unauthorized(let message) {
            #expect(message.contains("expired"), "\(message)")
        }
        var configuration = SyncConfiguration(tables: DemoSchema.syncedTables)
        configuration.space = "team"
        let device = try SyncClient.savedState(of: a.store, configuration: configuration)?.deviceID
        await a.client.updateToken(try await Self.sign(.init(subject: "alice", expiration: hour.addingTimeInterval(60), spaces: ["team": .editor])))
        let report = try await a.client.sync()
        #expect(report.pushed == 1 && !report.reidentified)
        let after = try SyncClient.savedState(of: a.store, configuration: configuration)?.deviceID
        #expect(device != nil && after == device, "the same device id")

        // Refused, with what is wrong.
        let expired = try await Self.sign(.init(subject: "alice", expiration: Date().addingTimeInterval(-60), spaces: ["team": .editor]))
        let forged = try await Self.sign(.init(subject: "mallory", expiration: hour, spaces: ["team": .owner]), secret: "another-secret-that-is-long-enough-0123456789")
        let (expiredStatus, expiredError) = try await Self.pull(space, bearer: expired)
        #expect(expiredStatus == 401 && expiredError.contains("expired"), "\(expiredError)")
        #expect(try await Self.pull(space, bearer: forged).0 == 401)
        let (ambiguous, ambiguousError) = try await Self.pull(space, bearer: alice)
        #expect(ambiguous == 400 && ambiguousError.contains("Sluice-Space"), "\(ambiguousError)")
        let (elsewhere, elsewhereError) = try await Self.pull(space, bearer: bob, named: "family")
        #expect(elsewhere == 403 && elsewhereError.contains("does not open space 'family'"), "\(elsewhereError)")
        #expect(try await Self.pull(space, bearer: alice, named: "family").0 == 200, "a viewer of family reads it")
        #expect(try await Self.pull(space, bearer: space.token).0 == 200, "tokens keep working beside JWTs")
    }
}
