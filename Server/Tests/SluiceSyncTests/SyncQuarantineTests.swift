import Foundation
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// Values a device cannot apply: the service refuses what the registered schema can know
/// is invalid (CHECK constraints too); what it cannot know (a service registered without
/// the statements, a column this device does not have yet) is quarantined on the device,
/// reported, and resolvable, while every other transaction is applied.
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncQuarantineTests {
    /// Pushes one transaction as device `device`, number `local`.
    static func push(_ space: SyncSpace, device: String = "tool", local: Int64, _ changes: [SyncChange]) async throws -> (Int, String) {
        try await SyncRequests.push(PushRequest(device: device, base: space.head(), transactions: [
            SyncTransaction(device: device, local: local, clock: HybridClock(date: Date()), changes: changes),
        ]), to: space, token: space.token)
    }

    /// A package for `person` and its content, weighing -1 (`CHECK (weight >= 0)`).
    static func packageWithNegativeWeight(for person: String) -> (SyncChange, SyncChange) {
        (SyncChange(table: "package", id: "k1", op: .insert, values: ["recipient_id": .reference(person), "sender_id": .null, "created_at": .text("2026-11-24")]),
         SyncChange(table: "package_content", id: "c1", op: .insert,
                    values: ["package_id": .reference("k1"), "title": .text("Books"), "weight": .integer(-1), "position": .integer(0)]))
    }

    @Test func theServiceRefusesAValueACheckConstraintRefuses() async throws {
        let space = try SyncSpace()
        let a = try space.device()
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ada', 'A')")
        try await a.client.sync()
        let person = try a.rows("SELECT gid FROM sluice_sync_id WHERE tbl = 'person'")[0]
        let (package, poison) = Self.packageWithNegativeWeight(for: person)
        let refused = try await Self.push(space, local: 1, [package, poison])
        #expect(refused.0 == 400 && refused.1.contains("CHECK constraint failed") && refused.1.contains("package_content c1"), "\(refused)")
        // Fine as inserted; refused when an update would make it invalid.
        var fine = poison
        fine.values?["weight"] = .integer(3)
        #expect(try await Self.push(space, local: 1, [package, fine]).0 == 200)
        let update = try await Self.push(space, local: 2, [SyncChange(table: "package_content", id: "c1", op: .update, values: ["WEIGHT": .integer(-5)])])
        #expect(update.0 == 400 && update.1.contains("CHECK constraint failed"), "\(update)")
        try await a.client.sync()
        #expect(try a.rows("SELECT title, weight FROM package_content") == ["Books|3"])
        try await SyncFaultTests.converge([a], postgres: space.postgres)
    }

    @Test func aTransactionADeviceCannotApplyIsQuarantinedAndTheRestApplied() async throws {
        // A service registered without the tables' statements (it cannot see the CHECK
        // constraint) and with a column the devices do not have yet.
        let folder = TemporaryDatabase()
        let schemaFile = folder.url("schema.json")
        let demo = try Store.inMemory(migrations: DemoSchema.migrations)
        var schema = try await demo.read { db in try SyncSchema(db, tables: DemoSchema.syncedTables) }
        for index in schema.tables.indices {
            schema.tables[index].sql = nil
            if schema.tables[index].name == "person" { schema.tables[index].columns.append(.init(name: "nickname", type: .text, isNullable: true)) }
        }
        try JSONEncoder().encode(schema).write(to: schemaFile)
        let space = try SyncSpace(serviceArguments: ["--schema", schemaFile.path])
        let a = try space.device()
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ada', 'A')")
        try await a.client.sync()
        let person = try a.rows("SELECT gid FROM sluice_sync_id WHERE tbl = 'person'")[0]
        let (package, poison) = Self.packageWithNegativeWeight(for: person)
        #expect(try await Self.push(space, local: 1, [package, poison]).0 == 200)
        #expect(try await Self.push(space, local: 2, [SyncChange(table: "person", id: person, op: .update, values: ["city": .text("Oslo")])]).0 == 200)
        #expect(try await Self.push(space, local: 3, [SyncChange(table: "person", id: "zed", op: .insert,
                                                                 values: ["first_name": .text("Zed"), "last_name": .text("Z"), "nickname": .text("Zee")])]).0 == 200)
        // Every device syncs: the one that has been here, and a new one.
        let b = try space.device()
        for device in [a, b] {
            let report = try await device.client.sync()
            #expect(report.pulled >= 3)
            #expect(try device.rows("SELECT first_name, coalesce(city, '-') FROM person ORDER BY first_name") == ["Ada|Oslo"])
            #expect(try device.rows("SELECT count(*) FROM package") == ["0"])
            let quarantined = try await device.client.quarantined()
            #expect(quarantined.count == 2)
            #expect(quarantined.first?.error.contains("CHECK constraint failed") == true, "\(quarantined)")
            #expect(quarantined.last?.error.contains("nickname") == true, "\(quarantined)")
            #expect(await device.client.snapshot.quarantinedCount == 2)
        }
        // Reported by the CLI without contacting the service.
        let status = try CommandRunner().run(["sync", "status", "--db", b.database.path])
        #expect(status.status == 0 && status.stdout.contains("quarantined 2 transactions"), "\(status)")
        let listed = try CommandRunner().run(["sync", "quarantine", "--db", b.database.path])
        #expect(listed.stdout.contains("CHECK constraint failed") && listed.stdout.contains("nickname"), "\(listed)")
        // Resolved: B's migration adds the column, and the retry applies that transaction;
        // the CHECK one stays until discarded.
        try b.sql("ALTER TABLE person ADD COLUMN nickname TEXT")
        let retried = try CommandRunner().run(["sync", "quarantine", "--retry", "--db", b.database.path])
        #expect(retried.status == 0 && retried.stdout.contains("applied 1 of 2"), "\(retried)")
        #expect(try b.rows("SELECT first_name, nickname FROM person WHERE nickname IS NOT NULL") == ["Zed|Zee"])
        let discarded = try CommandRunner().run(["sync", "quarantine", "--discard", "--db", b.database.path])
        #expect(discarded.stdout.contains("discarded 1 transaction"), "\(discarded)")
        #expect(try SyncClient.quarantined(in: b.store, configuration: SyncConfiguration(tables: DemoSchema.syncedTables)).isEmpty)
        // Syncing goes on both ways.
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ann', 'A')")
        try await a.client.sync()
        try await b.client.sync()
        #expect(try b.rows("SELECT first_name FROM person ORDER BY first_name") == ["Ada", "Ann", "Zed"])
    }
}
