import Foundation
import Sluice
import SluiceSyncClient
import SluiceSyncProtocol

/// Members and roles on any service: an owner shares the space in one call; a viewer
/// reads but its pushes are refused exactly (403 `forbidden`, nothing applied, its changes
/// kept, others' still pulled); an editor may be limited to some tables; only an owner
/// shares, with names and tables checked.
extension SyncConformance {
    /// The 403 refusal `body` throws.
    static func forbidden(_ context: String, _ body: () async throws -> Void) async throws -> SyncErrorBody {
        do {
            try await body()
        } catch SyncClientError.rejected(let status, let error) where status == 403 && error.code == .forbidden {
            return error
        }
        throw ConformanceFailure("\(context) was not refused as forbidden")
    }

    /// The service's people, as many as it holds.
    static func servicePeopleCount(_ service: any ConformanceService) async throws -> Int {
        try await service.content().filter { $0.hasPrefix("person ") }.count
    }

    static func aViewerReadsAndItsPushesAreRefusedExactly(_ service: any ConformanceService) async throws {
        let owner = try Device(service, token: try await service.newToken())
        let viewer = try Device(service, token: try await owner.client.share(with: "vera@example.com", as: .viewer))
        try owner.sql("INSERT INTO person (first_name, last_name) VALUES ('Ana', 'Kim')")
        try await owner.client.sync()
        try await viewer.client.sync()
        try expect(try viewer.rows("SELECT first_name FROM person") == ["Ana"], "the viewer reads \(try viewer.rows("SELECT first_name FROM person"))")

        try viewer.sql("INSERT INTO person (first_name, last_name) VALUES ('Vera', 'V')")
        let head = try await service.head()
        let refusal = try await forbidden("the viewer's push") { _ = try await viewer.client.sync() }
        try expect(refusal.message.contains("member 'vera@example.com' is a viewer"), "the refusal says \(refusal.message)")
        let after = (try await service.head(), try await servicePeopleCount(service))
        try expect(after == (head, 1), "the viewer's push applied something: head \(after.0), people \(after.1)")

        // The owner's next edit still reaches the viewer, whose own change stays queued.
        try owner.sql("UPDATE person SET city = 'Oslo' WHERE first_name = 'Ana'")
        try await owner.client.sync()
        _ = try await forbidden("the viewer's next push") { _ = try await viewer.client.sync() }
        let held = try viewer.rows("SELECT first_name || ':' || coalesce(city, '') FROM person ORDER BY first_name")
        try expect(held == ["Ana:Oslo", "Vera:"], "the viewer holds \(held)")
        try expect(try await viewer.client.pendingChangeCount() == 1, "the viewer's change is not kept")
    }

    static func anEditorWritesOnlyItsTablesAndOnlyOwnersShare(_ service: any ConformanceService) async throws {
        let owner = try Device(service, token: try await service.newToken())
        let editor = try Device(service, token: try await owner.client.share(with: "ed", as: .editor, tables: ["person"]))
        try editor.sql("INSERT INTO person (first_name, last_name) VALUES ('Ed', 'E')")
        try await editor.client.sync()
        try expect(try await servicePeopleCount(service) == 1, "the editor's person was not taken")

        // One transaction writing a person and a package: refused whole.
        let head = try await service.head()
        try await editor.store.write { db in
            try db.execute(sql: "INSERT INTO person (first_name, last_name) VALUES ('Pat', 'P')")
            try db.execute(sql: "INSERT INTO package (recipient_id, created_at) VALUES (?, '2026-11-27')", arguments: [.integer(db.lastInsertedRowID)])
        }
        let refusal = try await forbidden("a push beyond the editor's tables") { _ = try await editor.client.sync() }
        try expect(refusal.message.contains("may write person only") && refusal.message.contains("changes package"), "the refusal says \(refusal.message)")
        let after = (try await service.head(), try await servicePeopleCount(service))
        try expect(after == (head, 1), "not even the transaction's person may apply: head \(after.0), people \(after.1)")

        // Only an owner shares; names and tables are checked.
        let notOwner = try await forbidden("an editor sharing") { _ = try await editor.client.share(with: "someone", as: .viewer) }
        try expect(notOwner.message.contains("only an owner"), "the refusal says \(notOwner.message)")
        for (user, tables) in [("no spaces", nil), ("ok", ["no_such_table"])] as [(String, [String]?)] {
            do {
                _ = try await owner.client.share(with: user, as: .editor, tables: tables)
                throw ConformanceFailure("sharing with '\(user)' \(String(describing: tables)) was accepted")
            } catch SyncClientError.rejected(let status, let body) {
                try expect(status == 400 && body.code == .invalid, "sharing with '\(user)': \(status) \(body)")
            }
        }
    }

    /// A token the service never made opens nothing: every request is refused 401.
    static func anUnknownTokenOpensNothing(_ service: any ConformanceService) async throws {
        let stranger = service.transport(token: "slt_" + String(repeating: "0", count: 64))
        for (what, request) in [("a pull", { _ = try await stranger.pull(since: 0, limit: nil, device: nil) }),
                                ("a push", { _ = try await stranger.push(PushRequest(device: "stranger", base: 0, transactions: [])) })]
            as [(String, () async throws -> Void)] {
            do {
                try await request()
                throw ConformanceFailure("\(what) with an unknown token was answered")
            } catch SyncClientError.unauthorized {}
        }
    }
}
