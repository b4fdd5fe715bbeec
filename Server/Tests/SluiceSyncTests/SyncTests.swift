import Foundation
import SluiceSyncConformance
import Observation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// Devices syncing through a real `sluice-sync` against a real PostgreSQL.
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncTests {
    /// The full-text index is each device's own: pulled rows reach it through its
    /// triggers (a live search follows them), and neither the index nor its
    /// shadow tables are logged, pushed or stored by the service.
    @Test func eachDeviceBuildsItsOwnFullTextIndex() async throws {
        let space = try SyncSpace()
        let a = try space.device()
        let b = try space.device()
        let results = b.store.objects(Person.self).searching("zoe")
        let recorder = ChangeLog<Person>()
        let token = results.observe(on: DispatchQueue(label: "test")) { recorder.append($0) }
        defer { token.invalidate() }
        try await recorder.waitForCount(1)
        try a.sql("INSERT INTO person (first_name, last_name, city) VALUES ('Zoë', 'Ødegaard', 'Oslo'), ('Ana', 'Kim', 'Bergen')")
        try await a.client.sync()
        try await b.client.sync()
        try await recorder.waitForCount(2)
        guard case .update(let found, _, let insertions, _) = recorder.values[1] else {
            Issue.record("expected an update, got \(recorder.values[1])")
            return
        }
        #expect(found.map(\.firstName) == ["Zoë"] && insertions == [0])
        // An edit on A moves the row out of B's search.
        try a.sql("UPDATE person SET first_name = 'Zora' WHERE first_name = 'Zoë'")
        try await a.client.sync()
        try await b.client.sync()
        try await recorder.waitForCount(3)
        guard case .update(let left, let deletions, _, _) = recorder.values[2] else {
            Issue.record("expected an update, got \(recorder.values[2])")
            return
        }
        #expect(left.isEmpty && deletions == [0])
        #expect(try b.rows("SELECT rowid FROM sluice_fts_person WHERE sluice_fts_person MATCH 'zora'").count == 1)
        for device in [a, b] {
            #expect(try device.rows("SELECT count(*) FROM sluice_change WHERE tbl LIKE 'sluice%'") == ["0"])
        }
        #expect(try space.psql("SELECT count(*) FROM sluice_row WHERE tbl LIKE 'sluice%'").trimmingCharacters(in: .whitespacesAndNewlines) == "0")
    }

}

extension SyncTests {
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
        // Nothing was appended by any of them; the good push works, and only for its own space.
        #expect(try await post(good, token: space.token).0 == 200)
        let device = try Device(server: space.service.url, token: other)
        try await device.client.sync()
        #expect(try device.rows("SELECT count(*) FROM person") == ["0"])
        let mine = try space.device()
        try await mine.client.sync()
        #expect(try mine.rows("SELECT first_name, last_name FROM person") == ["A|B"])
    }

    @Test func referencesToARowDeletedElsewhereEndAsItsOnDeleteActionLeavesThem() async throws {
        // B deletes P offline while A files packages with P as sender (SET NULL) and as recipient (CASCADE).
        let space = try SyncSpace()
        let a = try space.device()
        let b = try space.device()
        let p = try a.sql("INSERT INTO person (first_name, last_name) VALUES ('P', 'P')")
        let r = try a.sql("INSERT INTO person (first_name, last_name) VALUES ('R', 'R')")
        try await a.client.sync()
        try await b.client.sync()
        try b.sql("DELETE FROM person WHERE first_name = 'P'")
        try a.sql("INSERT INTO package (recipient_id, sender_id, created_at) VALUES (?, ?, 'sent by P')", [.integer(r), .integer(p)])
        try a.sql("INSERT INTO package (recipient_id, sender_id, created_at) VALUES (?, ?, 'for P')", [.integer(p), .integer(r)])
        try await a.client.sync()
        try await b.client.sync()
        try await a.client.sync()
        #expect(try a.rows("SELECT created_at, sender_id IS NULL FROM package") == ["sent by P|1"])
        #expect(try a.content() == b.content())
        let service = try SyncContent.ofService(space.postgres)
        #expect(service == (try a.content()), "service: \(service)")
    }

    @MainActor @Test func syncStatusIsObservable() async throws {
        let space = try SyncSpace()
        let a = try space.device()
        let status = SyncStatus(a.client)
        let other = SyncStatus(a.client)   // a second observer sees the same changes
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('A', 'B')")
        let changed = Locked(false)
        func poll(_ condition: () -> Bool) async throws {
            let deadline = ContinuousClock.now + .seconds(20)
            while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(condition(), "the condition did not hold within 20 s")
        }
        withObservationTracking { _ = (status.status, status.pendingChangeCount, status.lastSync) } onChange: { changed.withLock { $0 = true } }
        try await a.client.sync()
        try await poll { status.lastSync != nil && other.lastSync != nil }
        #expect(changed.withLock { $0 })
        #expect(status.status == .idle && status.pendingChangeCount == 0 && status.cursor == 1)
        #expect(other.cursor == 1)
        // A device whose service is down: offline, its change pending.
        let offline = try Device(server: URL(string: "http://127.0.0.1:1")!, token: space.token)
        let offlineStatus = SyncStatus(offline.client)
        try offline.sql("INSERT INTO person (first_name, last_name) VALUES ('C', 'D')")
        await #expect(throws: SyncClientError.self) { try await offline.client.sync() }
        try await poll { if case .offline = offlineStatus.status { true } else { false } }
        #expect(offlineStatus.pendingChangeCount == 1)
    }
}

/// Changes recorded from an observation callback, awaited by count.
final class ChangeLog<T: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: guarded by the lock.
    private let lock = NSLock()
    private var storage: [CollectionChange<T>] = []

    func append(_ change: CollectionChange<T>) { lock.withLock { storage.append(change) } }
    var values: [CollectionChange<T>] { lock.withLock { storage } }

    func waitForCount(_ count: Int, timeout: Duration = .seconds(20)) async throws {
        let deadline = ContinuousClock.now + timeout
        while values.count < count {
            guard ContinuousClock.now < deadline else {
                Issue.record("waited for \(count) changes, got \(values.count)")
                return
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
