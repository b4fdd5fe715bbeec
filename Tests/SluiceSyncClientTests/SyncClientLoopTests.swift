import Foundation
import SluiceDemo
@testable import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// The client's sync loop against a history service in memory (no PostgreSQL): pulling and
/// pushing until both sides agree, a push sent back to pull first, an answer lost after the
/// service stored the push, and an id another store holds.
@Suite(.timeLimit(.minutes(1))) struct SyncClientLoopTests {
    final class Device: @unchecked Sendable {
        // @unchecked Sendable: used by one test task at a time.
        let database = TemporaryDatabase()
        let store: Store
        let client: SyncClient

        init(_ service: HistoryService, token: String = "token") throws {
            store = try database.store(migrations: DemoSchema.migrations)
            client = try SyncClient(store: store, transport: service.transport(token: token),
                                    configuration: SyncConfiguration(tables: DemoSchema.syncedTables))
        }

        func sql(_ sql: String) throws { try store.write { db in try db.execute(sql: sql) } }

        /// The people here, `first last city`, sorted.
        func people() throws -> [String] {
            try store.read { db in
                try db.fetchRows(sql: "SELECT first_name, last_name, coalesce(city, '-') FROM person").map { row in
                    row.values.map { "\($0)" }.joined(separator: " ")
                }
            }.sorted()
        }
    }

    @Test("two devices converge through the service: inserts, an update, a delete")
    func twoDevicesConverge() async throws {
        let service = HistoryService()
        let a = try Device(service)
        let b = try Device(service)
        try a.sql("INSERT INTO person (first_name, last_name, city) VALUES ('Ann', 'Berg', 'Oslo'), ('Bo', 'Lund', 'Bergen')")
        try await a.client.sync()
        try await b.client.sync()
        #expect(try b.people() == ["Ann Berg Oslo", "Bo Lund Bergen"])

        try b.sql("UPDATE person SET city = 'Trondheim' WHERE first_name = 'Ann'")
        try b.sql("DELETE FROM person WHERE first_name = 'Bo'")
        let pushed = try await b.client.sync()
        #expect(pushed.pushed == 2)
        let pulled = try await a.client.sync()
        #expect(pulled.pulled == 2)
        #expect(try a.people() == ["Ann Berg Trondheim"])
        #expect(try b.people() == ["Ann Berg Trondheim"])
        #expect(try await a.client.pendingChangeCount() == 0)
        #expect(try await b.client.pendingChangeCount() == 0)
    }

    @Test("a push on an old base is sent back: the device pulls, then pushes again on the new head")
    func behindPullsThenPushesAgain() async throws {
        let service = HistoryService()
        let a = try Device(service)
        let b = try Device(service)
        try await a.client.sync()
        try await b.client.sync()
        // Both write while apart; a syncs first.
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ann', 'Berg')")
        try b.sql("INSERT INTO person (first_name, last_name) VALUES ('Cy', 'Holm')")
        try await a.client.sync()
        let head = service.head
        let report = try await b.client.sync()
        #expect(report.behind == 1)
        #expect(report.pushed == 1)
        #expect(report.pulled == 1)
        // b's transaction went on top of a's.
        let pushes = service.requests.filter { $0.hasPrefix("push") }.suffix(2)
        #expect(pushes.map { $0.contains("base \(head - 1)") } == [true, false])
        #expect(pushes.last?.contains("base \(head)") == true)
        try await a.client.sync()
        #expect(try a.people() == ["Ann Berg -", "Cy Holm -"])
        #expect(try b.people() == (try a.people()))
    }

    @Test("a push whose answer is lost after the service stored it is sent again as it was, and stored once")
    func lostAnswerIsRecognisedAsOwn() async throws {
        let service = HistoryService()
        let a = try Device(service)
        try await a.client.sync()
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ann', 'Berg')")
        service.failNextPush(.afterStoring)
        await #expect(throws: SyncClientError.self) { try await a.client.sync() }
        #expect(service.head == 1)
        #expect(try await a.client.pendingChangeCount() == 1)

        try await a.client.sync()
        // The retry carries the same number and clock, so the service skips it: stored once.
        let pushes = service.requests.filter { $0.hasPrefix("push") }.suffix(2)
        #expect(Set(pushes).count == 1, "\(service.requests)")
        #expect(service.head == 1)
        #expect(try a.people() == ["Ann Berg -"])
        #expect(try await a.client.pendingChangeCount() == 0)
    }

    @Test("a push that does not reach the service loses nothing: the next sync sends it")
    func pushThatNeverArrivedIsSentAgain() async throws {
        let service = HistoryService()
        let a = try Device(service)
        try await a.client.sync()
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ann', 'Berg')")
        service.failNextPush(.beforeStoring)
        await #expect(throws: SyncClientError.self) { try await a.client.sync() }
        #expect(service.head == 0)
        #expect(try await a.client.pendingChangeCount() == 1)
        let report = try await a.client.sync()
        #expect(report.pushed == 1)
        #expect(service.head == 1)
    }

    @Test("an id another token holds: the device takes a new id and pushes under it")
    func identityConflictTakesANewID() async throws {
        let service = HistoryService()
        let a = try Device(service, token: "token-a")
        let b = try Device(service, token: "token-b")
        // b claims a's id (a store copied with its sync state, or a forged one).
        try await a.client.sync()
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ann', 'Berg')")
        try await a.client.sync()
        let aID = try await a.client.deviceID
        try await b.store.write { db in try DeviceStateTable(db).set(.device, .text(aID)) }
        try b.sql("INSERT INTO person (first_name, last_name) VALUES ('Cy', 'Holm')")
        let report = try await b.client.sync()
        #expect(report.reidentified)
        #expect(try await b.client.deviceID != aID)
        #expect(try b.people() == ["Ann Berg -", "Cy Holm -"])
        try await a.client.sync()
        #expect(try a.people() == ["Ann Berg -", "Cy Holm -"])
    }
}
