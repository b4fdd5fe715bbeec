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
/// service's rows its subscriptions keep, with the rows those point at. (What a round sends,
/// subscriptions changing at run time, refusals and the random property are
/// SyncConformance's scenarios, run against this service and the one in memory.)
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

    /// What a device with `subscriptions` must hold: the service's rows its filters keep
    /// (computed here in Swift from the service's rows, not by the code under test), and
    /// the rows those point at, transitively.
    static func expected(_ space: SyncSpace, _ subscriptions: [SyncSubscription]) throws -> [String] {
        SyncConformance.expected(try SyncContent.ofService(space.postgres), subscriptions)
    }
}

