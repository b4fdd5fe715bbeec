import Foundation
import SluiceSyncConformance
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// Compaction: a new device starts from a snapshot of the folded rows and the history after
/// it, ending equal to one that replayed everything; the history is pruned up to what every
/// active device has pulled; a device gone longer than the horizon starts over from a
/// snapshot and keeps its unpushed edits.
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncCompactionTests {
    /// Transactions `device` applied from pulls (its log's transactions by the sync author).
    static func pulledTransactions(_ device: Device) throws -> Int {
        try device.store.changes(since: HistoryToken(databaseID: device.store.currentToken.databaseID, sequence: 0))
            .count { $0.author == "sync" }
    }

    /// A history with inserts, updates, deletes and the service's own ON DELETE transactions.
    static func history(_ writer: Device) async throws {
        for index in 0..<12 {
            let person = try writer.sql("INSERT INTO person (first_name, last_name, city) VALUES (?, 'H', 'Oslo')", [.text("p\(index)")])
            try writer.sql("INSERT INTO package (recipient_id, sender_id, created_at) VALUES (?, ?, ?)", [.integer(person), .integer(person), .text("d\(index)")])
            try await writer.client.sync()
        }
        try writer.sql("UPDATE person SET city = 'Rome' WHERE first_name IN ('p1', 'p2', 'p3')")
        try writer.sql("DELETE FROM person WHERE first_name IN ('p4', 'p5')")
        try writer.sql("UPDATE package SET created_at = 'late' WHERE created_at = 'd7'")
        try await writer.client.sync()
    }

    @Test func aNewDeviceFromASnapshotEqualsOneThatReplayedEverything() async throws {
        let space = try SyncSpace()
        let writer = try space.device()
        try await Self.history(writer)
        let replay = try space.device()
        try await replay.client.sync()
        // The whole history gone: the next device can only start from the snapshot.
        _ = try PostgresCluster.run(CommandRunner.executable(named: "sluice-sync").path,
                                    ["compact", "--postgres", space.postgres, "--space", "test", "--horizon-days", "0"])
        #expect(try space.psql("SELECT count(*) FROM sluice_txn").trimmingCharacters(in: .whitespacesAndNewlines) == "1",
                "only the writer's last transaction stays")
        let snapshot = try space.device()
        try await snapshot.client.sync()
        let service = try SyncContent.ofService(space.postgres)
        #expect(try snapshot.content() == service)
        #expect(try replay.content() == service)
        #expect(try Self.pulledTransactions(snapshot) == 1, "one local transaction: the snapshot")

        // Both go on from the head.
        try writer.sql("UPDATE person SET age = 7 WHERE first_name = 'p0'")
        try await writer.client.sync()
        for device in [snapshot, replay] {
            try await device.client.sync()
            #expect(try device.rows("SELECT age FROM person WHERE first_name = 'p0'") == ["7"])
        }
        try snapshot.sql("UPDATE person SET age = 8 WHERE first_name = 'p1'")
        try await snapshot.client.sync()
        try await writer.client.sync()
        #expect(try writer.content() == (try SyncContent.ofService(space.postgres)))
        #expect(try writer.rows("SELECT age FROM person WHERE first_name = 'p1'") == ["8"])
    }

    @Test func historyIsPrunedToWhatActiveDevicesHaveAndADeviceGoneLongerStartsOver() async throws {
        let space = try SyncSpace()
        let a = try space.device()
        let b = try space.device()
        try await Self.history(a)
        // Twice: a device's position is where its last pull started.
        for _ in 0..<2 { for device in [a, b] { try await device.client.sync() } }
        let tool = CommandRunner.executable(named: "sluice-sync").path
        func compact(days: String) throws -> String {
            try PostgresCluster.run(tool, ["compact", "--postgres", space.postgres, "--space", "test", "--horizon-days", days])
        }
        func count() throws -> Int { Int(try space.psql("SELECT count(*) FROM sluice_txn").trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1 }
        let before = try count()
        let head = try space.head()
        #expect(try compact(days: "30").contains("pruned through \(head)"))
        let after = try count()
        #expect(after < before && after <= 3, "pruned \(before) → \(after); each device's last transaction stays (a retried push is still recognized)")

        // B goes quiet; A goes on. B was seen within the horizon: its history stays.
        let bAt = try space.head()
        for index in 0..<3 {
            try a.sql("UPDATE person SET age = ? WHERE first_name = 'p0'", [.integer(Int64(index))])
            try await a.client.sync()
        }
        for _ in 0..<2 { try await a.client.sync() }
        #expect(try compact(days: "30").contains("pruned through \(bAt)"))
        // B edits offline; then B is gone longer than the horizon (0 days): pruned past it.
        try b.sql("UPDATE person SET city = 'Tromsø' WHERE first_name = 'p1'")
        try b.sql("INSERT INTO person (first_name, last_name) VALUES ('offline', 'B')")
        let headNow = try space.head()
        #expect(try compact(days: "0").contains("pruned through \(headNow)"))
        var request = URLRequest(url: try #require(URL(string: "\(space.service.url.absoluteString)/v1/pull?since=\(bAt)")))
        request.setValue("Bearer \(space.token)", forHTTPHeaderField: "Authorization")
        let (body, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 410 && String(decoding: body, as: UTF8.self).contains("compacted"),
                "\(String(decoding: body, as: UTF8.self))")

        // B comes back: a snapshot, its edits rebased and pushed, nothing lost.
        try await b.client.sync()
        try await a.client.sync()
        let service = try SyncContent.ofService(space.postgres)
        #expect(try a.content() == service)
        #expect(try b.content() == service)
        #expect(try a.rows("SELECT city FROM person WHERE first_name = 'p1'") == ["Tromsø"])
        #expect(try a.rows("SELECT count(*) FROM person WHERE first_name = 'offline'") == ["1"])
        #expect(try await b.client.pendingChangeCount() == 0)
        // A new device after pruning starts from the snapshot.
        let late = try space.device()
        try await late.client.sync()
        #expect(try late.content() == service)
        // An unknown space is an error, not a silent no-op.
        #expect(throws: (any Error).self) { try PostgresCluster.run(tool, ["compact", "--postgres", space.postgres, "--space", "nowhere"]) }
    }
}
