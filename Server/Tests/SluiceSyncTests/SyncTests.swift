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

/// What the real service refuses before any rule of sync: no bearer or a wrong one, a body
/// over its limit; and a space sees only its own rows. (The sync loop's scenarios run on
/// this service and the in-memory one: SyncConformanceTests.)
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncTests {
    @Test func theServiceRefusesWhatDoesNotFit() async throws {
        let space = try SyncSpace(serviceArguments: ["--max-body-bytes", "100000"])
        let other = try SyncServiceProcess.addToken(postgres: space.postgres, space: "someone-else")
        func post(_ body: Data, token: String?) async throws -> (Int, String) { try await SyncRequests.post(body, to: space, token: token) }
        func push(_ changes: [SyncChange]) throws -> Data {
            try JSONEncoder().encode(PushRequest(device: "d1", base: 0, transactions: [
                SyncTransaction(device: "d1", local: 1, clock: HybridClock(rawValue: 1), changes: changes),
            ]))
        }
        let good = try push([SyncChange(table: "person", id: "p1", op: .insert, values: ["first_name": .text("A"), "last_name": .text("B")])])
        #expect(try await post(good, token: nil).0 == 401)
        #expect(try await post(good, token: "slt_wrong").0 == 401)
        // Changes that do not fit the schema: SyncConformance's scenarios (both services).
        let huge = try push([SyncChange(table: "person", id: "p", op: .insert, values: ["first_name": .text(String(repeating: "x", count: 200_000)), "last_name": .text("B")])])
        #expect(try await post(huge, token: space.token).0 == 413)
        // Each body names its own limit: a rows request's is 256 KiB, not the push's.
        let rows = try await SyncRequests.post(Data(repeating: 0x20, count: 300_000), to: space, token: space.token, path: "v1/rows")
        #expect(rows.0 == 413 && rows.1.contains("262144 bytes"), "\(rows)")
        // Nothing was appended by any of them; the good push works, and only for its own space.
        #expect(try await post(good, token: space.token).0 == 200)
        let device = try Device(server: space.service.url, token: other)
        try await device.client.sync()
        #expect(try device.rows("SELECT count(*) FROM person") == ["0"])
        let mine = try space.device()
        try await mine.client.sync()
        #expect(try mine.rows("SELECT first_name, last_name FROM person") == ["A|B"])
    }
}
