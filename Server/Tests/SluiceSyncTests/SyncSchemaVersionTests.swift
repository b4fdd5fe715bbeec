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

/// Schema versions: devices of app version 1 and 2 share a space while version 2 adds a
/// column (person.nickname) and a table (label) and renames a column (person.postal_code →
/// zip, declared): version 1 keeps working and keeps its data, version 2 sees version 1's
/// edits, and the service refuses only what the device's version (or, unsaid, every version)
/// cannot accept.
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncSchemaVersionTests {
    static let version2 = Migration(version: 100, name: "app_version_2", sql: """
        ALTER TABLE person ADD COLUMN nickname TEXT;
        ALTER TABLE person RENAME COLUMN postal_code TO zip;
        CREATE TABLE label (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        """)

    /// The service's registered versions, as `sluice-sync serve --schema` reads them.
    static func versionsFile(_ database: TemporaryDatabase) throws -> String {
        let one = try Store.inMemory(migrations: DemoSchema.migrations)
        let two = try Store.inMemory(migrations: DemoSchema.migrations + [version2])
        let versions = try SyncSchemaVersions([
            .init(version: 1, schema: try one.read { db in try SyncSchema(db, tables: DemoSchema.syncedTables) }),
            .init(version: 2, schema: try two.read { db in try SyncSchema(db, tables: DemoSchema.syncedTables + ["label"]) },
                  renamed: ["person": ["postal_code": "zip"]]),
        ])
        let url = database.url("versions.json")
        try JSONEncoder().encode(versions).write(to: url)
        return url.path
    }

    @Test func versionOneAndTwoShareASpace() async throws {
        let files = TemporaryDatabase()
        let space = try SyncSpace(serviceArguments: ["--schema", try Self.versionsFile(files)])
        let old = try space.device { $0.schemaVersion = 1 }
        let newStore = try files.store(migrations: DemoSchema.migrations + [Self.version2])
        var configuration = SyncConfiguration(tables: DemoSchema.syncedTables + ["label"])
        configuration.schemaVersion = 2
        let new = try SyncClient(store: newStore, server: space.service.url, token: space.token, configuration: configuration)
        func newRows(_ sql: String) throws -> [String] {
            try newStore.read { db in try db.fetchRows(sql: sql).map { $0.values.map { "\($0)" }.joined(separator: "|") } }
        }

        // Version 1's edit, in its names, reaches version 2 in version 2's.
        try old.sql("INSERT INTO person (first_name, last_name, city, postal_code) VALUES ('Ana', 'A', 'Oslo', '0150')")
        try await old.client.sync()
        try await new.sync()
        #expect(try newRows("SELECT first_name, city, zip, coalesce(nickname, '-') FROM person") == ["Ana|Oslo|0150|-"])

        // Version 2 writes what version 1 does not have, and a renamed column.
        try await newStore.write { db in
            try db.execute(sql: "UPDATE person SET nickname = 'Annie', zip = '0151'")
            try db.execute(sql: "INSERT INTO label (name) VALUES ('red')")
        }
        try await new.sync()
        try await old.client.sync()
        #expect(try old.rows("SELECT first_name, city, postal_code FROM person") == ["Ana|Oslo|0151"])
        #expect(try await old.client.quarantined().isEmpty, "nothing version 1 cannot apply reaches it")

        // Version 1 goes on editing; version 2's column stays.
        try old.sql("UPDATE person SET city = 'Bergen', postal_code = '5003'")
        try await old.client.sync()
        try await new.sync()
        #expect(try newRows("SELECT city, zip, nickname FROM person") == ["Bergen|5003|Annie"])
        #expect(try newRows("SELECT name FROM label") == ["red"])
        // Stored in the newest names.
        let stored = try SyncRequests.storedRows(space, table: "person").joined()
        #expect(stored.contains("zip=") && !stored.contains("postal_code="), "\(stored)")
        #expect(try await old.client.pendingChangeCount() == 0)
        #expect(try await new.pendingChangeCount() == 0)

        // Refused only what the version cannot accept.
        func push(_ values: [String: SyncValue], version: Int?) async throws -> Int {
            let change = SyncChange(table: "person", id: UUID().uuidString.lowercased(), op: .insert,
                                    values: ["first_name": .text("R"), "last_name": .text("R")].merging(values) { $1 })
            let body = PushRequest(device: "raw-" + UUID().uuidString.lowercased(), base: try space.head(),
                                   transactions: [SyncTransaction(device: "raw", local: 1, clock: HybridClock(date: Date()), changes: [change])])
            var request = URLRequest(url: space.service.url.appendingPathComponent("v1/push"))
            request.httpMethod = "POST"
            request.httpBody = try JSONEncoder().encode(body)
            request.setValue("Bearer \(space.token)", forHTTPHeaderField: "Authorization")
            if let version { request.setValue(String(version), forHTTPHeaderField: "Sluice-Schema-Version") }
            let (_, response) = try await URLSession.shared.data(for: request)
            return (response as? HTTPURLResponse)?.statusCode ?? 0
        }
        #expect(try await push(["nickname": .text("x")], version: 1) == 400, "version 1 has no nickname")
        #expect(try await push(["zip": .text("x")], version: 1) == 400, "version 1 calls it postal_code")
        #expect(try await push(["postal_code": .text("x")], version: 1) == 200)
        #expect(try await push(["nickname": .text("x")], version: nil) == 200, "unsaid: version 2 accepts it")
        #expect(try await push(["postal_code": .text("x")], version: nil) == 200, "unsaid: version 1 accepts it")
        #expect(try await push(["shoe_size": .integer(44)], version: nil) == 400, "no version accepts it")
        #expect(try await push(["postal_code": .text("x")], version: 7) == 400, "an unknown version")
        #expect(try SyncRequests.storedRows(space, table: "person").joined().contains("postal_code=") == false)
    }

    /// A version-1 device replaces a whole row (`INSERT OR REPLACE`): version 2's column
    /// stays, on the service, on a device that starts from a snapshot and on one that was
    /// there (it was erased on the first two and kept on the third: the copies diverged).
    @Test func anOlderVersionNeverErasesAColumnItDoesNotKnow() async throws {
        let files = TemporaryDatabase()
        let space = try SyncSpace(serviceArguments: ["--schema", try Self.versionsFile(files)])
        let old = try space.device { $0.schemaVersion = 1 }
        func newDevice(snapshot: Bool = false) throws -> (Store, SyncClient) {
            let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations + [Self.version2])
            var configuration = SyncConfiguration(tables: DemoSchema.syncedTables + ["label"])
            configuration.schemaVersion = 2
            configuration.startsFromSnapshot = snapshot
            return (store, try SyncClient(store: store, server: space.service.url, token: space.token, configuration: configuration))
        }
        func nicknames(_ store: Store) throws -> [String] {
            try store.read { db in try db.fetchRows(sql: "SELECT first_name, coalesce(nickname, '-'), city FROM person").map { $0.values.map { "\($0)" }.joined(separator: "|") } }
        }
        let (newStore, new) = try newDevice()
        try await newStore.write { db in try db.execute(sql: "INSERT INTO person (first_name, last_name, city, nickname) VALUES ('Ana', 'A', 'Oslo', 'Annie')") }
        try await new.sync()
        try await old.client.sync()
        let id = try #require(try old.rows("SELECT id FROM person").first)
        try old.sql("INSERT OR REPLACE INTO person (id, first_name, last_name, city) VALUES (\(id), 'Ana', 'A', 'Rome')")
        try await old.client.sync()
        try await new.sync()
        #expect(try nicknames(newStore) == ["Ana|Annie|Rome"], "the device that was there")
        let stored = try SyncRequests.storedRows(space, table: "person").joined()
        #expect(stored.contains("nickname=") && stored.contains("Annie"), "the service: \(stored)")
        for snapshot in [true, false] {
            let (freshStore, fresh) = try newDevice(snapshot: snapshot)
            try await fresh.sync()
            #expect(try nicknames(freshStore) == ["Ana|Annie|Rome"], snapshot ? "a device from a snapshot" : "a device replaying the history")
        }
    }
}
