import Foundation
import SluiceSyncConformance
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// Partial sync: a device subscribes with the filters of its live queries; rows entering
/// and leaving its subset arrive and go as ordinary changesets; its rows always equal the
/// service's rows its subscriptions keep, with the rows those point at.
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncSubsetTests {
    static let oslo = SyncConformance.oslo

    /// The packages a live query shows, by creation date.
    static func dates(_ change: CollectionChange<Row>) -> [String] {
        switch change {
        case .initial(let packages), .update(let packages, _, _, _): packages.map { "\($0["created_at"] ?? .null)" }
        case .error: []
        }
    }

    @Test func rowsEnterAndLeaveAsChangesets() async throws {
        let space = try SyncSpace()
        let full = try space.device()
        let subset = try space.device { $0.subscriptions = [Self.oslo] }
        let ana = try full.sql("INSERT INTO person (first_name, last_name, city) VALUES ('Ana', 'A', 'Oslo')")
        let bo = try full.sql("INSERT INTO person (first_name, last_name, city) VALUES ('Bo', 'B', 'Bergen')")
        try full.sql("INSERT INTO package (recipient_id, sender_id, created_at) VALUES (?, ?, '1')", [.integer(ana), .integer(bo)])
        try full.sql("INSERT INTO package (recipient_id, created_at) VALUES (?, '2')", [.integer(bo)])
        try full.sql("INSERT INTO package_content (package_id, title, weight, position) VALUES (1, 'tea', 5, 0)")
        try await full.client.sync()

        let recorder = ChangeLog<Row>()
        let token = subset.store.rows(in: "package").sorted(by: [Ordering("created_at")]).observe(on: DispatchQueue(label: "test")) { recorder.append($0) }
        defer { token.invalidate() }
        try await recorder.waitForCount(1)
        func people() throws -> [String] { try subset.rows("SELECT first_name FROM person ORDER BY first_name") }

        // Ana's package, with Ana and its sender Bo (the rows it points at); not Bo's package, no contents.
        try await subset.client.sync()
        try await recorder.waitForCount(2)
        guard case .update(_, let deletions, let insertions, _) = recorder.values[1] else { Issue.record("\(recorder.values)"); return }
        #expect(Self.dates(recorder.values[1]) == ["1"] && deletions.isEmpty && insertions == [0])
        #expect(try people() == ["Ana", "Bo"])
        #expect(try subset.rows("SELECT count(*) FROM package_content") == ["0"])

        // Bo moves to Oslo: his package enters, though the package itself did not change.
        try full.sql("UPDATE person SET city = 'Oslo' WHERE id = ?", [.integer(bo)])
        try await full.client.sync()
        try await subset.client.sync()
        try await recorder.waitForCount(3)
        guard case .update(_, let deletions, let insertions, let modifications) = recorder.values[2] else { Issue.record("\(recorder.values)"); return }
        #expect(Self.dates(recorder.values[2]) == ["1", "2"] && deletions.isEmpty && insertions == [1] && modifications.isEmpty)

        // Ana moves away: her package leaves, and Ana with it (nothing here points at her).
        try full.sql("UPDATE person SET city = 'Rome' WHERE id = ?", [.integer(ana)])
        try await full.client.sync()
        try await subset.client.sync()
        try await recorder.waitForCount(4)
        guard case .update(_, let deletions, let insertions, _) = recorder.values[3] else { Issue.record("\(recorder.values)"); return }
        #expect(Self.dates(recorder.values[3]) == ["2"] && deletions == [0] && insertions.isEmpty)
        #expect(try people() == ["Bo"])
        // Removed here only: the service and the other device keep Ana and her package.
        #expect(try full.rows("SELECT count(*) FROM package") == ["2"])
        #expect(try SyncRequests.storedRows(space, table: "person").count == 2)
        #expect(try await subset.client.pendingChangeCount() == 0)

        // A change to a kept row is a modification; the subset device's own edit reaches everyone.
        try full.sql("UPDATE package SET created_at = '3' WHERE created_at = '2'")
        try await full.client.sync()
        try await subset.client.sync()
        try await recorder.waitForCount(5)
        guard case .update(_, _, _, let modifications) = recorder.values[4] else { Issue.record("\(recorder.values)"); return }
        #expect(Self.dates(recorder.values[4]) == ["3"] && modifications == [0])
        try subset.sql("UPDATE package SET created_at = '4'")
        try await subset.client.sync()
        try await full.client.sync()
        #expect(try full.rows("SELECT created_at FROM package ORDER BY created_at") == ["1", "4"])

        // Deleted on the service: gone here too.
        try full.sql("DELETE FROM person WHERE id = ?", [.integer(bo)])
        try await full.client.sync()
        try await subset.client.sync()
        try await recorder.waitForCount(7)
        #expect(recorder.values.last.map(Self.dates) == [])
        #expect(try people() == [])
        #expect(try subset.content() == (try Self.expected(space, [Self.oslo])))
    }

    /// A round after `since` sends the values of the rows the subscriptions keep and of the
    /// rows those point at, and no other: a changed person no kept package points at goes
    /// as `leave` (its id), not with its values.
    @Test func aRoundSendsNoRowsOutsideTheSubscriptions() async throws {
        let space = try SyncSpace()
        let full = try space.device()
        let ana = try full.sql("INSERT INTO person (first_name, last_name, city) VALUES ('Ana', 'A', 'Oslo')")
        let cy = try full.sql("INSERT INTO person (first_name, last_name, city) VALUES ('Cy', 'C', 'Bergen')")
        try full.sql("INSERT INTO package (recipient_id, created_at) VALUES (?, '1')", [.integer(ana)])
        try full.sql("INSERT INTO package (recipient_id, created_at) VALUES (?, '2')", [.integer(cy)])
        try await full.client.sync()
        let since = try space.head()
        try full.sql("UPDATE person SET email = 'new@example.com'")
        try await full.client.sync()

        let body = try JSONEncoder().encode(RowsRequest(since: since, subscriptions: [Self.oslo]))
        let (status, text) = try await SyncRequests.post(body, to: space, token: space.token, path: "v1/rows")
        #expect(status == 200, "\(text)")
        let page = try JSONDecoder().decode(RowsResponse.self, from: Data(text.utf8))
        let people = page.changes.filter { $0.op == .insert && $0.table == "person" }.map { $0.values?["first_name"] }
        #expect(people == [.text("Ana")], "only Ana, whom the kept package points at: \(page.changes)")
        let packages = page.changes.filter { $0.op == .insert && $0.table == "package" }.map { $0.values?["created_at"] }
        #expect(packages == [.text("1")], "only Ana's package (its path's parent changed): \(page.changes)")
        #expect(!page.changes.contains { $0.values?["first_name"] == .text("Cy") }, "Cy's values stay on the service")
    }

    @Test func subscriptionsChangeAtRunTimeAndADeviceMaySyncFewerTables() async throws {
        let space = try SyncSpace()
        let full = try space.device()
        for (name, city) in [("Ana", "Oslo"), ("Bo", "Bergen"), ("Cy", "Rome")] {
            let person = try full.sql("INSERT INTO person (first_name, last_name, city) VALUES (?, 'X', ?)", [.text(name), .text(city)])
            let package = try full.sql("INSERT INTO package (recipient_id, created_at) VALUES (?, ?)", [.integer(person), .text(name)])
            try full.sql("INSERT INTO package_content (package_id, title, weight, position) VALUES (?, 'box', 1, 0)", [.integer(package)])
        }
        try full.sql("INSERT INTO message (conversation_id, sender, text, sent_at) VALUES (1, 'ana', 'hi', '2026')")
        try await full.client.sync()

        // People only, from the whole history: the other tables' changes are not its business.
        let people = try space.device { $0.tables = ["person"] }
        try await people.client.sync()
        #expect(try people.rows("SELECT first_name FROM person ORDER BY 1") == ["Ana", "Bo", "Cy"])
        #expect(try await people.client.quarantined().isEmpty)
        try people.sql("UPDATE person SET age = 30 WHERE first_name = 'Bo'")
        try await people.client.sync()
        try await full.client.sync()
        #expect(try full.rows("SELECT coalesce(age, 0) FROM person ORDER BY first_name") == ["0", "30", "0"])

        // A subset device changes what it syncs; each time it holds exactly what the service's rows give.
        let subset = try space.device { $0.subscriptions = [Self.oslo] }
        try await subset.client.sync()
        #expect(try subset.content() == (try Self.expected(space, [Self.oslo])))
        let steps: [[SyncSubscription]?] = [
            [SyncSubscription(table: "package", where: Column("created_at") >= "Bo"), SyncSubscription(table: "message")],
            [try .rows(of: Person.self, where: \.city == "Bergen"), SyncSubscription(table: "package_content", where: Column("weight") >= 1)],
            nil,
            [Self.oslo],
        ]
        for step in steps {
            try await subset.client.subscribe(step)
            if let step {
                #expect(try subset.content() == (try Self.expected(space, step)), "\(step)")
            } else {
                #expect(try subset.content() == (try SyncContent.ofService(space.postgres)))
            }
        }
        #expect(try await subset.client.pendingChangeCount() == 0)
        #expect(try full.content() == (try SyncContent.ofService(space.postgres)), "nothing a subset device removed went anywhere")
    }

    @Test func theServiceRefusesSubscriptionsItCannotKeepExactly() async throws {
        let space = try SyncSpace()
        let device = try space.device()
        let cases: [(SyncSubscription, String)] = [
            (SyncSubscription(table: "package", filter: "contents.weight > 5"), "not a path through a foreign key"),
            (SyncSubscription(table: "package", filter: "ANY contents.weight > 5"), "ANY, ALL or NONE"),
            (SyncSubscription(table: "package_content", filter: "package.recipient.city == 'Oslo'"), "not a path through a foreign key"),
            (SyncSubscription(table: "package", filter: "recipient.town == 'Oslo'"), "unknown column 'town'"),
            (SyncSubscription(table: "person", filter: "MATCH 'oslo'"), "MATCH"),
            (SyncSubscription(table: "parcel"), "unknown table 'parcel'"),
        ]
        for (subscription, message) in cases {
            let rows = RowsRequest(since: 0, subscriptions: [subscription])
            let (status, body) = try await SyncRequests.post(JSONEncoder().encode(rows), to: space, token: space.token, path: "v1/rows")
            #expect(status == 400 && body.contains(message), "\(subscription): \(status) \(body)")
        }
        // A hostile page position: refused, not a trap.
        let hostile = RowsRequest(since: 0, subscriptions: [Self.oslo], after: RowsPosition(subscription: -1, id: ""))
        let (status, body) = try await SyncRequests.post(JSONEncoder().encode(hostile), to: space, token: space.token, path: "v1/rows")
        #expect(status == 400 && body.contains("names no part of this round"), "\(status) \(body)")
        // The client refuses what it can tell itself.
        await #expect(throws: StoreError.self) { try await device.client.subscribe([SyncSubscription(table: "nowhere")]) }
        await #expect(throws: StoreError.self) { try await device.client.subscribe([Self.oslo, Self.oslo]) }
    }

    /// The lines only one side has.
    /// What a device with `subscriptions` must hold: the service's rows its filters keep
    /// (computed here in Swift from the service's rows, not by the code under test), and
    /// the rows those point at, transitively.
    static func expected(_ space: SyncSpace, _ subscriptions: [SyncSubscription]) throws -> [String] {
        SyncConformance.expected(try SyncContent.ofService(space.postgres), subscriptions)
    }
}

