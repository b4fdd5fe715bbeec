import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// Device identity: a store file copied (a backup restored, an app moved to a new phone),
/// a store that claims another device's id, a push under a device id another token
/// registered. Every edit of every copy reaches every device and the service.
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncIdentityTests {
    /// Copies a closed store's files (the database and, if any, its WAL).
    static func copyStore(_ source: String, to destination: String) throws {
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: source + suffix) {
            try FileManager.default.copyItem(atPath: source + suffix, toPath: destination + suffix)
        }
    }

    /// The people every copy must end with.
    static func people(_ device: Device) throws -> [String] {
        try device.rows("SELECT first_name, last_name, coalesce(city, '-'), coalesce(age, -1) FROM person ORDER BY first_name, last_name")
    }

    @Test func aCopiedStoreFileKeepsTheEditsOfBothCopies() async throws {
        let space = try SyncSpace()
        let folder = TemporaryDatabase()
        let original = folder.url("original.sqlite").path
        let copy = folder.url("copy.sqlite").path
        let firstID: String
        do {
            let device = try Device(path: original, server: space.service.url, token: space.token)
            try device.sql("INSERT INTO person (first_name, last_name) VALUES ('Ada', 'Before')")
            try await device.client.sync()
            firstID = try await device.client.deviceID
        }
        try Self.copyStore(original, to: copy)
        let a = try Device(path: original, server: space.service.url, token: space.token)
        let c = try Device(path: copy, server: space.service.url, token: space.token)
        #expect(try await a.client.deviceID == firstID)
        #expect(try await c.client.deviceID != firstID, "the copy keeps the original's device id")
        // Each copy edits on its own: a new row each, and a column each of the shared row.
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ann', 'Original')")
        try a.sql("UPDATE person SET city = 'Oslo' WHERE first_name = 'Ada'")
        try c.sql("INSERT INTO person (first_name, last_name) VALUES ('Cid', 'Copy')")
        try c.sql("UPDATE person SET age = 7 WHERE first_name = 'Ada'")
        try await a.client.sync()
        try await c.client.sync()
        try await a.client.sync()
        let expected = ["Ada|Before|Oslo|7", "Ann|Original|-|-1", "Cid|Copy|-|-1"]
        #expect(try Self.people(a) == expected)
        #expect(try Self.people(c) == expected)
        let fresh = try space.device()
        try await fresh.client.sync()
        #expect(try Self.people(fresh) == expected)
        try await SyncFaultTests.converge([a, c, fresh], postgres: space.postgres)
    }

    @Test func aStoreClaimingAnotherDevicesIDIsReidentifiedAndLosesNothing() async throws {
        // The per-file identity cannot see this one (B's own file, A's id written into it, as
        // a store restored on a system where the file identity is not available would be):
        // the service's history of the id and the device's own record of what it sent do.
        let space = try SyncSpace()
        let a = try space.device()
        let b = try space.device()
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ada', 'A')")
        try await a.client.sync()
        try b.sql("INSERT INTO person (first_name, last_name) VALUES ('Bo', 'B')")
        try await b.client.sync()
        let stolen = try await a.client.deviceID
        let reopened = try await b.store.write { db in
            try db.execute(sql: "UPDATE sluice_sync_state SET value = ? WHERE key = 'device'", arguments: [.text(stolen)])
            return try db.fetchRows(sql: "SELECT value FROM sluice_sync_state WHERE key = 'device'").first?[0]
        }
        #expect(reopened == .text(stolen))
        let claimant = try Device(path: b.database.path, server: space.service.url, token: space.token)
        for round in 0..<3 {
            try a.sql("INSERT INTO person (first_name, last_name) VALUES (?, 'A')", [.text("a\(round)")])
            try claimant.sql("INSERT INTO person (first_name, last_name) VALUES (?, 'B')", [.text("b\(round)")])
            try await a.client.sync()
            try await claimant.client.sync()
        }
        try await a.client.sync()
        #expect(try await claimant.client.deviceID != stolen)
        let expected = ["Ada|A|-|-1", "Bo|B|-|-1", "a0|A|-|-1", "a1|A|-|-1", "a2|A|-|-1", "b0|B|-|-1", "b1|B|-|-1", "b2|B|-|-1"]
        #expect(try Self.people(a) == expected)
        #expect(try Self.people(claimant) == expected)
        try await SyncFaultTests.converge([a, claimant], postgres: space.postgres)
    }

    @Test func aDeviceIDBelongsToTheTokenThatRegisteredIt() async throws {
        let space = try SyncSpace()
        let other = try SyncServiceProcess.addToken(postgres: space.postgres, space: "test")
        let a = try space.device()
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ada', 'A')")
        try await a.client.sync()
        let id = try await a.client.deviceID
        // Another token of the same space pushes as A: refused, nothing appended.
        let forged = PushRequest(device: id, base: 1, transactions: [
            SyncTransaction(device: id, local: 1_000_000, clock: HybridClock(date: Date()), changes: [
                SyncChange(table: "person", id: "forged", op: .insert, values: ["first_name": .text("F"), "last_name": .text("F")]),
            ]),
        ])
        let (status, body) = try await SyncRequests.push(forged, to: space, token: other)
        #expect(status == 409 && body.contains("identity_conflict"), "\(status) \(body)")
        #expect(try SyncFaultTests.history(space.postgres).count == 1)
        // Under its own id it is accepted; A goes on as before.
        var own = forged
        own.device = "another-device"
        #expect(try await SyncRequests.push(own, to: space, token: other).0 == 200)
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ann', 'A')")
        try await a.client.sync()
        #expect(try await a.client.deviceID == id)
        #expect(try Self.people(a) == ["Ada|A|-|-1", "Ann|A|-|-1", "F|F|-|-1"])
    }
}

/// Raw requests to a service, as a hostile or broken client sends them.
enum SyncRequests {
    static func push(_ push: PushRequest, to space: SyncSpace, token: String) async throws -> (Int, String) {
        try await post(JSONEncoder().encode(push), to: space, token: token)
    }

    static func post(_ body: Data, to space: SyncSpace, token: String?, path: String = "v1/push") async throws -> (Int, String) {
        var request = URLRequest(url: space.service.url.appendingPathComponent(path))
        request.httpMethod = "POST"
        request.httpBody = body
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    /// The service's stored rows of `table` as `id column=value` lines (JSON keys as stored).
    static func storedRows(_ space: SyncSpace, table: String) throws -> [String] {
        let output = try space.psql("""
            SELECT id || ' ' || (SELECT string_agg(key || '=' || value::text, ' ' ORDER BY key) FROM jsonb_each(vals))
            FROM sluice_row WHERE tbl = '\(table)' AND NOT deleted ORDER BY id
            """)
        return output.split(separator: "\n").map(String.init)
    }
}
