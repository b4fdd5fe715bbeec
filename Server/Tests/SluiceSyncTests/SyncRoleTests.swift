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

/// Members and roles: an owner shares a space in one call (the API, the client, the CLI); a
/// viewer reads but its pushes are refused exactly (403 `forbidden`, nothing applied, its
/// changes kept, others' still pulled); an editor may be limited to some tables; only an
/// owner shares; a removed member's token opens nothing.
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncRoleTests {
    /// Runs `body` and returns the 403 refusal it throws (nil, recorded, when it throws none).
    static func forbidden(_ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async -> SyncErrorBody? {
        do {
            try await body()
            Issue.record("expected 403 forbidden", sourceLocation: sourceLocation)
        } catch SyncClientError.rejected(let status, let error) where status == 403 {
            return error
        } catch {
            Issue.record("expected 403 forbidden, got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    @Test func aViewerReadsAndItsPushesAreRefusedExactly() async throws {
        let space = try SyncSpace()
        let owner = try space.device()
        let viewerToken = try await owner.client.share(with: "vera@example.com", as: .viewer)
        let viewer = try Device(server: space.service.url, token: viewerToken)
        try owner.sql("INSERT INTO person (first_name, last_name) VALUES ('Ana', 'Kim')")
        try await owner.client.sync()
        try await viewer.client.sync()
        #expect(try viewer.rows("SELECT first_name FROM person") == ["Ana"])

        try viewer.sql("INSERT INTO person (first_name, last_name) VALUES ('Vera', 'V')")
        let head = try space.head()
        let refusal = await Self.forbidden { _ = try await viewer.client.sync() }
        #expect(refusal?.error == "forbidden" && refusal?.message.contains("member 'vera@example.com' is a viewer") == true, "\(String(describing: refusal))")
        #expect(try space.head() == head, "nothing of the push applied")
        #expect(try SyncRequests.storedRows(space, table: "person").count == 1)

        // The owner's next edit still reaches the viewer, whose own change stays queued.
        try owner.sql("UPDATE person SET city = 'Oslo' WHERE first_name = 'Ana'")
        try await owner.client.sync()
        _ = await Self.forbidden { _ = try await viewer.client.sync() }
        #expect(try viewer.rows("SELECT first_name || ':' || coalesce(city, '') FROM person ORDER BY first_name") == ["Ana:Oslo", "Vera:"])
        #expect(try await viewer.client.pendingChangeCount() == 1)
    }

    @Test func anEditorWritesOnlyItsTablesAndOnlyOwnersShare() async throws {
        let space = try SyncSpace()
        let owner = try space.device()
        let editor = try Device(server: space.service.url, token: try await owner.client.share(with: "ed", as: .editor, tables: ["person"]))
        try editor.sql("INSERT INTO person (first_name, last_name) VALUES ('Ed', 'E')")
        try await editor.client.sync()
        #expect(try SyncRequests.storedRows(space, table: "person").count == 1)

        // One transaction writing a person and a package: refused whole.
        let head = try space.head()
        try await editor.store.write { db in
            try db.execute(sql: "INSERT INTO person (first_name, last_name) VALUES ('Pat', 'P')")
            try db.execute(sql: "INSERT INTO package (recipient_id, created_at) VALUES (?, '2026-11-27')", arguments: [.integer(db.lastInsertedRowID)])
        }
        let refusal = await Self.forbidden { _ = try await editor.client.sync() }
        #expect(refusal?.message.contains("may write person only") == true && refusal?.message.contains("changes package") == true, "\(String(describing: refusal))")
        #expect(try space.head() == head)
        #expect(try SyncRequests.storedRows(space, table: "person").count == 1, "not even the transaction's person")

        // Only an owner shares; names and tables are checked.
        let notOwner = await Self.forbidden { _ = try await editor.client.share(with: "someone", as: .viewer) }
        #expect(notOwner?.message.contains("only an owner") == true)
        for (user, tables) in [("no spaces", nil), ("ok", ["no_such_table"])] as [(String, [String]?)] {
            do {
                _ = try await owner.client.share(with: user, as: .editor, tables: tables)
                Issue.record("\(user) \(String(describing: tables)) was accepted")
            } catch SyncClientError.rejected(let status, let body) {
                #expect(status == 400 && body.error == "invalid", "\(body)")
            }
        }
    }

    @Test func theCLISharesAndRemovesMembers() async throws {
        let space = try SyncSpace()
        let tool = CommandRunner.executable(named: "sluice-sync").path
        let output = try PostgresCluster.run(tool, ["share", "--postgres", space.postgres, "--space", "test", "--user", "cli", "--role", "viewer"])
        let token = try #require(output.split(separator: "\n").last.map(String.init))
        #expect(token.hasPrefix("slt_"), "\(output)")
        #expect(try await SyncProtectionTests.get(space, token: token).0 == 200, "the member's token opens the space")
        _ = try PostgresCluster.run(tool, ["member", "remove", "--postgres", space.postgres, "--space", "test", "--user", "cli"])
        try await Task.sleep(for: .milliseconds(2_100))   // past the instance's memory of tokens
        #expect(try await SyncProtectionTests.get(space, token: token).0 == 401, "a removed member's token opens nothing")
        let bad = Process()
        bad.executableURL = URL(fileURLWithPath: tool)
        bad.arguments = ["share", "--postgres", space.postgres, "--space", "test", "--user", "x", "--role", "boss"]
        bad.standardError = FileHandle.nullDevice
        bad.standardOutput = FileHandle.nullDevice
        try bad.run()
        bad.waitUntilExit()
        #expect(bad.terminationStatus != 0, "an unknown role is refused")
    }
}
