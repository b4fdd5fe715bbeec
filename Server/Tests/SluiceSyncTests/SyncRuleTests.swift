import Foundation
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// The rules that keep every copy equal whatever devices send: clocks bounded by the
/// service and stamped at commit, column names as the registered schema spells them.
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

    @Test func anEditIsStampedWhenItIsCommittedNotWhenItSyncs() async throws {
        // A edits offline, then B edits the same column later and syncs first. When A
        // syncs, B's later edit wins: the last writer, not the last to sync.
        let space = try SyncSpace()
        let a = try space.device()
        let b = try space.device()
        try a.sql("INSERT INTO person (first_name, last_name, city) VALUES ('Ada', 'A', 'Bergen')")
        try await a.client.sync()
        try await b.client.sync()
        try a.sql("UPDATE person SET city = 'Earlier'")
        try await Task.sleep(for: .milliseconds(50))
        try b.sql("UPDATE person SET city = 'Later'")
        try await b.client.sync()
        try await a.client.sync()
        try await b.client.sync()
        #expect(try a.rows("SELECT city FROM person") == ["Later"])
        #expect(try b.rows("SELECT city FROM person") == ["Later"])
        try await SyncFaultTests.converge([a, b], postgres: space.postgres)
    }

    @Test func concurrentPushesAreSequencedUnlessTheyWriteTheSameColumns() async throws {
        let space = try SyncSpace()
        let a = try space.device()
        let b = try space.device()
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ada', 'A')")
        try b.sql("INSERT INTO person (first_name, last_name) VALUES ('Bo', 'B')")
        try await a.client.sync()
        try await b.client.sync()
        try await a.client.sync()
        // Each edits its own row, and a different column of the other's: B's push comes after
        // A's without B having pulled it, and is taken as it is.
        try a.sql("UPDATE person SET city = 'Oslo' WHERE first_name = 'Ada'")
        try a.sql("UPDATE person SET age = 30 WHERE first_name = 'Bo'")
        try b.sql("UPDATE person SET city = 'Riga' WHERE first_name = 'Bo'")
        try b.sql("UPDATE person SET email = 'ada@example.com' WHERE first_name = 'Ada'")
        #expect(try await a.client.sync().behind == 0)
        let second = try await b.client.sync()
        #expect(second.behind == 0 && second.pulled == 2, "\(second)")
        try await a.client.sync()
        let expected = ["Ada|Oslo|-|ada@example.com", "Bo|Riga|30|-"]
        for device in [a, b] {
            #expect(try device.rows("SELECT first_name, coalesce(city, '-'), coalesce(age, '-'), coalesce(email, '-') FROM person ORDER BY 1") == expected)
        }
        // Pushes on one base: one writing a column another wrote since is sent back to pull.
        let base = try space.head()
        let ada = try a.rows("SELECT i.gid FROM sluice_sync_id i JOIN person p ON p.id = i.local WHERE i.tbl = 'person' AND p.first_name = 'Ada'")[0]
        let bo = try a.rows("SELECT i.gid FROM sluice_sync_id i JOIN person p ON p.id = i.local WHERE i.tbl = 'person' AND p.first_name = 'Bo'")[0]
        func push(_ device: String, _ id: String, _ values: [String: SyncValue]) async throws -> (Int, String) {
            try await SyncRequests.push(PushRequest(device: device, base: base, transactions: [
                SyncTransaction(device: device, local: 1, clock: HybridClock(date: Date()), changes: [SyncChange(table: "person", id: id, op: .update, values: values)]),
            ]), to: space, token: space.token)
        }
        #expect(try await push("tool-1", ada, ["city": .text("Bergen")]).0 == 200)
        let same = try await push("tool-2", ada, ["CITY": .text("Tromsø")])
        #expect(same.0 == 409 && same.1.contains("behind"), "\(same)")
        #expect(try await push("tool-3", ada, ["age": .integer(41)]).0 == 200)
        #expect(try await push("tool-4", bo, ["city": .text("Kyiv")]).0 == 200)
        // A delete of a row the history updated since (whatever the column) is sent back too.
        let removal = try await SyncRequests.push(PushRequest(device: "tool-5", base: base, transactions: [
            SyncTransaction(device: "tool-5", local: 1, clock: HybridClock(date: Date()), changes: [SyncChange(table: "person", id: bo, op: .delete)]),
        ]), to: space, token: space.token)
        #expect(removal.0 == 409 && removal.1.contains("behind"), "\(removal)")
        try await a.client.sync()
        try await b.client.sync()
        #expect(try b.rows("SELECT first_name, city, coalesce(age, '-') FROM person ORDER BY 1") == ["Ada|Bergen|41", "Bo|Kyiv|30"])
        try await SyncFaultTests.converge([a, b], postgres: space.postgres)
    }

    @Test func columnNamesAreStoredAsTheSchemaSpellsThem() async throws {
        let space = try SyncSpace()
        let push = { (local: Int64, change: SyncChange) in
            let head = try space.head()
            return try await SyncRequests.push(PushRequest(device: "shouty", base: head, transactions: [
                SyncTransaction(device: "shouty", local: local, clock: HybridClock(date: Date()), changes: [change]),
            ]), to: space, token: space.token)
        }
        let insert = try await push(1, SyncChange(table: "PERSON", id: "p1", op: .insert,
                                                  values: ["First_Name": .text("Ada"), "LAST_NAME": .text("A"), "age": .integer(1)]))
        #expect(insert.0 == 200, "\(insert.1)")
        let update = try await push(2, SyncChange(table: "Person", id: "p1", op: .update, values: ["AGE": .integer(5)]))
        #expect(update.0 == 200, "\(update.1)")
        #expect(try SyncRequests.storedRows(space, table: "person") == [#"p1 age={"i": 5} first_name={"t": "Ada"} last_name={"t": "A"}"#])
        // One column twice in one change is refused, naming it.
        let twice = try await push(3, SyncChange(table: "person", id: "p1", op: .update, values: ["AGE": .integer(6), "age": .integer(7)]))
        #expect(twice.0 == 400 && twice.1.contains("age"), "\(twice)")
        let device = try space.device()
        try await device.client.sync()
        #expect(try device.rows("SELECT first_name, age FROM person") == ["Ada|5"])
    }
}
