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

/// Compaction in PostgreSQL: the pruned history keeps each device's last transaction, and
/// an unknown space is an error. (What devices see of compaction, snapshots after pruning,
/// a device gone longer starting over with its edits, are conformance scenarios run on this
/// service and the in-memory one.)
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncCompactionTests {
    @Test func thePrunedHistoryKeepsEachDevicesLastTransaction() async throws {
        let space = try SyncSpace()
        let (writer, other) = (try space.device(), try space.device())
        for index in 0..<5 {
            try writer.sql("INSERT INTO person (first_name, last_name) VALUES (?, 'W')", [.text("w\(index)")])
            try await writer.client.sync()
        }
        try other.sql("INSERT INTO person (first_name, last_name) VALUES ('o', 'O')")
        try await other.client.sync()
        #expect(try space.compact(horizonDays: 0) == (try space.head()))
        let kept = try space.psql("SELECT count(*) FROM sluice_txn").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(kept == "2", "each device's last transaction stays (a retried push is still recognized by it): \(kept)")
        // An unknown space is an error, not a silent no-op.
        let tool = CommandRunner.executable(named: "sluice-sync").path
        #expect(throws: (any Error).self) { try PostgresCluster.run(tool, ["compact", "--postgres", space.postgres, "--space", "nowhere"]) }
    }
}
