import Foundation
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// Clocks bounded by the service, whatever devices send (a clock at the end of time). (Edits
/// stamped at commit, pushes on one base, column names as the schema spells them:
/// SyncConformance's scenarios, run against this service and the one in memory.)
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncRuleTests {
    /// The largest clock the service's history holds, as a date.
    static func latestStoredClock(_ space: SyncSpace) throws -> Date {
        let text = try space.psql("SELECT max(clock) FROM sluice_txn")
        return HybridClock(rawValue: Int64(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0).date
    }

    @Test func theServiceBoundsClocksFromTheFuture() async throws {
        let space = try SyncSpace()
        let a = try space.device()
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ada', 'A')")
        try await a.client.sync()
        let gid = try a.rows("SELECT gid FROM sluice_sync_id WHERE tbl = 'person'")[0]
        // One device's clock at the end of time, another's three hours ahead.
        for (device, clock) in [("end-of-time", HybridClock(rawValue: .max)), ("hours-ahead", HybridClock(date: Date().addingTimeInterval(3 * 3600)))] {
            let head = try space.head()
            let push = PushRequest(device: device, base: head, transactions: [
                SyncTransaction(device: device, local: 1, clock: clock, changes: [SyncChange(table: "person", id: gid, op: .update, values: ["city": .text(device)])]),
            ])
            let (status, body) = try await SyncRequests.push(push, to: space, token: space.token)
            #expect(status == 200, "\(body)")
            #expect(body.contains("\"clamped\":1"), "the answer does not say the clock was bounded: \(body)")
            #expect(try Self.latestStoredClock(space) < Date().addingTimeInterval(120))
        }
        // A device that pulls them keeps a clock near the wall clock, and its next edit, later
        // than both, wins over them.
        try await a.client.sync()
        let saved = try a.rows("SELECT value FROM sluice_sync_state WHERE key = 'clock'").first.flatMap { Int64($0) } ?? .max
        #expect(HybridClock(rawValue: saved).date < Date().addingTimeInterval(120))
        try await Task.sleep(for: .milliseconds(20))
        try a.sql("UPDATE person SET city = 'Oslo'")
        try await a.client.sync()
        #expect(try Self.latestStoredClock(space) < Date().addingTimeInterval(120))
        let b = try space.device()
        try await b.client.sync()
        #expect(try b.rows("SELECT city FROM person") == ["Oslo"])
    }
}
