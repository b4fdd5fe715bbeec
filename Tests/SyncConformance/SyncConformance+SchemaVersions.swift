import Foundation
import Sluice
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol

/// Schema versions on any service: devices of app versions 1 and 2 share a space while
/// version 2 adds a column (person.nickname) and a table (label) and renames a column
/// (person.postal_code → zip, declared). Version 1 keeps working and keeps its data,
/// version 2 sees version 1's edits, an older version never erases a column it does not
/// know, and the service refuses only what the device's version (or, unsaid, every version)
/// cannot accept. These run on a service of ``Versions``.
extension SyncConformance {
    /// The demo app's schema as version 1, and version 2.
    public enum Versions {
        public static let version2 = Migration(version: 100, name: "app_version_2", sql: """
            ALTER TABLE person ADD COLUMN nickname TEXT;
            ALTER TABLE person RENAME COLUMN postal_code TO zip;
            CREATE TABLE label (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
            """)

        /// The versions a service registers (as `sluice-sync serve --schema` reads them).
        public static func versions() throws -> SyncSchemaVersions {
            let one = try Store.inMemory(migrations: DemoSchema.migrations)
            let two = try Store.inMemory(migrations: DemoSchema.migrations + [version2])
            return try SyncSchemaVersions([
                .init(version: 1, schema: try one.read { db in try SyncSchema(db, tables: DemoSchema.syncedTables) }),
                .init(version: 2, schema: try two.read { db in try SyncSchema(db, tables: DemoSchema.syncedTables + ["label"]) },
                      renamed: ["person": ["postal_code": "zip"]]),
            ])
        }
    }

    /// The scenarios that need a service of ``Versions``, by name.
    static let versionScenarios: [(name: String, run: Scenario)] = [
        ("versions 1 and 2 share a space, each in its own names; the service refuses what the version cannot accept", versionsOneAndTwoShareASpace),
        ("a row version 1 replaces keeps version 2's column on the service and on every device", anOlderVersionNeverErasesAColumnItDoesNotKnow),
    ]

    static func versionDevice(_ service: any ConformanceService, _ version: Int, _ configure: (inout SyncConfiguration) -> Void = { _ in }) async throws -> Device {
        let token = try await service.newToken()
        if version == 1 { return try Device(service, token: token, schemaVersion: 1, configure) }
        return try Device(service, token: token, migrations: DemoSchema.migrations + [Versions.version2], tables: DemoSchema.syncedTables + ["label"],
                          schemaVersion: version, configure)
    }

    static func versionsOneAndTwoShareASpace(_ service: any ConformanceService) async throws {
        let old = try await versionDevice(service, 1)
        let new = try await versionDevice(service, 2)

        // Version 1's edit, in its names, reaches version 2 in version 2's.
        try old.sql("INSERT INTO person (first_name, last_name, city, postal_code) VALUES ('Ana', 'A', 'Oslo', '0150')")
        try await old.client.sync()
        try await new.client.sync()
        let arrived = try new.rows("SELECT first_name, city, zip, coalesce(nickname, '-') FROM person")
        try expect(arrived == ["Ana|Oslo|0150|-"], "version 2 holds \(arrived)")

        // Version 2 writes what version 1 does not have, and a renamed column.
        try await new.store.write { db in
            try db.execute(sql: "UPDATE person SET nickname = 'Annie', zip = '0151'")
            try db.execute(sql: "INSERT INTO label (name) VALUES ('red')")
        }
        try await new.client.sync()
        try await old.client.sync()
        try expect(try old.rows("SELECT first_name, city, postal_code FROM person") == ["Ana|Oslo|0151"], "version 1 holds \(try old.rows("SELECT * FROM person"))")
        try expect(try await old.client.quarantined().isEmpty, "version 1 quarantined what it cannot apply: it should never have received it")

        // Version 1 goes on editing; version 2's column stays.
        try old.sql("UPDATE person SET city = 'Bergen', postal_code = '5003'")
        try await old.client.sync()
        try await new.client.sync()
        try expect(try new.rows("SELECT city, zip, nickname FROM person") == ["Bergen|5003|Annie"], "version 2 holds \(try new.rows("SELECT * FROM person"))")
        try expect(try new.rows("SELECT name FROM label") == ["red"], "version 2's labels: \(try new.rows("SELECT name FROM label"))")
        // Stored in the newest names.
        let zips = SyncContent.column("zip", of: "person", in: try await service.content())
        let postalCodes = SyncContent.column("postal_code", of: "person", in: try await service.content())
        try expect(zips.values.sorted() == ["text:5003"] && postalCodes.isEmpty, "the service stores zip \(zips), postal_code \(postalCodes)")
        let pending = (try await old.client.pendingChangeCount(), try await new.client.pendingChangeCount())
        try expect(pending == (0, 0), "still pending: \(pending)")

        // Refused only what the version cannot accept.
        func push(_ values: [String: SyncValue], version: Int?) async throws -> String {
            let transport = service.transport(token: try await service.newToken(), schemaVersion: version)
            let change = SyncChange(table: "person", id: UUID().uuidString.lowercased(), op: .insert,
                                    values: ["first_name": .text("R"), "last_name": .text("R")].merging(values) { $1 })
            let device = "raw-" + UUID().uuidString.lowercased()
            let body = PushRequest(device: device, base: try await service.head(),
                                   transactions: [SyncTransaction(device: device, local: 1, clock: HybridClock(date: Date()), changes: [change])])
            do {
                _ = try await transport.push(body)
                return "ok"
            } catch SyncClientError.rejected(let status, let body) {
                return "\(status) \(body.code)"
            }
        }
        let answers = [try await push(["nickname": .text("x")], version: 1), try await push(["zip": .text("x")], version: 1),
                       try await push(["postal_code": .text("x")], version: 1), try await push(["nickname": .text("x")], version: nil),
                       try await push(["postal_code": .text("x")], version: nil), try await push(["shoe_size": .integer(44)], version: nil),
                       try await push(["postal_code": .text("x")], version: 7)]
        // Version 1 has no nickname and calls zip postal_code; unsaid, version 2 accepts a
        // nickname and version 1 a postal_code; no version has a shoe size, nor is there a version 7.
        try expect(answers == ["400 invalid", "400 invalid", "ok", "ok", "ok", "400 invalid", "400 invalid"], "raw pushes answered \(answers)")
        let stored = try await service.content()
        try expect(SyncContent.column("postal_code", of: "person", in: stored).isEmpty, "a postal_code is stored under its old name")
        try expect(SyncContent.column("zip", of: "person", in: stored).count == 3, "not every zip is stored as zip: \(stored)")
    }

    /// A version-1 device replaces a whole row (`INSERT OR REPLACE`): version 2's column
    /// stays, on the service, on a device that starts from a snapshot and on one that was
    /// there (it was erased on the first two and kept on the third: the copies diverged).
    static func anOlderVersionNeverErasesAColumnItDoesNotKnow(_ service: any ConformanceService) async throws {
        let old = try await versionDevice(service, 1)
        let new = try await versionDevice(service, 2)
        func nicknames(_ device: Device) throws -> [String] { try device.rows("SELECT first_name, coalesce(nickname, '-'), city FROM person") }
        try new.sql("INSERT INTO person (first_name, last_name, city, nickname) VALUES ('Ana', 'A', 'Oslo', 'Annie')")
        try await new.client.sync()
        try await old.client.sync()
        guard let id = try old.rows("SELECT id FROM person").first else { throw ConformanceFailure("version 1 did not get the row") }
        try old.sql("INSERT OR REPLACE INTO person (id, first_name, last_name, city) VALUES (\(id), 'Ana', 'A', 'Rome')")
        try await old.client.sync()
        try await new.client.sync()
        try expect(try nicknames(new) == ["Ana|Annie|Rome"], "the device that was there holds \(try nicknames(new))")
        let stored = SyncContent.column("nickname", of: "person", in: try await service.content())
        try expect(stored.values.sorted() == ["text:Annie"], "the service holds nickname \(stored)")
        for snapshot in [true, false] {
            let fresh = try await versionDevice(service, 2) { $0.startsFromSnapshot = snapshot }
            try await fresh.client.sync()
            try expect(try nicknames(fresh) == ["Ana|Annie|Rome"], "a device \(snapshot ? "from a snapshot" : "replaying the history") holds \(try nicknames(fresh))")
        }
    }
}
