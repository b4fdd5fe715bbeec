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

    /// Each row keeps the clock of each column's last write, made once for a transaction
    /// whose inserts (or updates) all write the same columns and per row otherwise.
    @Test func eachColumnKeepsTheClockOfItsLastWrite() async throws {
        let space = try SyncSpace()
        func push(_ local: Int64, base: Int64, clock: Int64, _ changes: [SyncChange]) async throws {
            let request = PushRequest(device: "d1", base: base, transactions: [SyncTransaction(device: "d1", local: local, clock: HybridClock(rawValue: clock), changes: changes)])
            let (status, body) = try await SyncRequests.push(request, to: space, token: space.token)
            #expect(status == 200, "\(body)")
        }
        func person(_ id: String, _ op: SyncChange.Operation, _ values: [String: SyncValue]) -> SyncChange {
            SyncChange(table: "person", id: id, op: op, values: values)
        }
        // The same columns in every insert (the clocks made once), then differing ones.
        try await push(1, base: 0, clock: 100, [person("p1", .insert, ["first_name": .text("A"), "last_name": .text("B")]),
                                                 person("p2", .insert, ["first_name": .text("C"), "last_name": .text("D")])])
        try await push(2, base: 1, clock: 200, [person("p3", .insert, ["first_name": .text("E"), "last_name": .text("F"), "age": .integer(3)]),
                                                 person("p4", .insert, ["first_name": .text("G"), "last_name": .text("H")])])
        // Updates writing one column alike, then updates writing different ones.
        try await push(3, base: 2, clock: 300, [person("p1", .update, ["age": .integer(1)]), person("p2", .update, ["age": .integer(2)])])
        try await push(4, base: 3, clock: 400, [person("p3", .update, ["first_name": .text("e")]), person("p4", .update, ["city": .text("Oslo")])])
        let clocks = try space.psql("SELECT id || ' ' || clocks::text FROM sluice_row WHERE tbl = 'person' ORDER BY id")
        #expect(clocks.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) } == [
            #"p1 {"age": 300, "last_name": 100, "first_name": 100}"#,
            #"p2 {"age": 300, "last_name": 100, "first_name": 100}"#,
            #"p3 {"age": 200, "last_name": 200, "first_name": 400}"#,
            #"p4 {"city": 400, "last_name": 200, "first_name": 200}"#,
        ], "\(clocks)")
    }
}
