import Foundation
import Sluice
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport

/// Values a device cannot apply: what the registered schema cannot know is invalid (a
/// service registered without the tables' statements, a column this device does not have
/// yet) is quarantined on the device, reported (also by the CLI, offline) and resolvable,
/// while every other transaction is applied. (What the schema can know, the service
/// refuses: ``checkConstraintsAreTheServicesToo(_:)``.) These run on a service set up
/// ``Setup/withoutStatements``.
extension SyncConformance {
    /// The demo app's schema as a service registered without the tables' statements (it
    /// sees no CHECK constraint), with a column (person.nickname) the devices do not have.
    public static func schemaWithoutStatements() throws -> SyncSchema {
        var schema = try Store.inMemory(migrations: DemoSchema.migrations).read { db in try SyncSchema(db, tables: DemoSchema.syncedTables) }
        for index in schema.tables.indices {
            schema.tables[index].sql = nil
            if schema.tables[index].name == "person" { schema.tables[index].columns.append(.init(name: "nickname", type: .text, isNullable: true)) }
        }
        return schema
    }

    static let quarantineScenarios: [(name: String, run: Scenario)] = [
        ("a transaction a device cannot apply is quarantined, reported and resolvable, and the rest applied", aTransactionADeviceCannotApplyIsQuarantined),
    ]

    static func aTransactionADeviceCannotApplyIsQuarantined(_ service: any ConformanceService) async throws {
        let a = try Device(service, token: try await service.newToken())
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ada', 'A')")
        try await a.client.sync()
        let person = try a.rows("SELECT gid FROM sluice_sync_id WHERE tbl = 'person'")[0]
        // Pushed by a tool: a package content weighing -1 (`CHECK (weight >= 0)`), an edit,
        // and a person with the nickname the devices do not have.
        let tool = service.transport(token: try await service.newToken())
        let package = SyncChange(table: "package", id: "k1", op: .insert, values: ["recipient_id": .reference(person), "sender_id": .null, "created_at": .text("2026-11-24")])
        let poison = SyncChange(table: "package_content", id: "c1", op: .insert,
                                values: ["package_id": .reference("k1"), "title": .text("Books"), "weight": .integer(-1), "position": .integer(0)])
        let transactions = [[package, poison], [SyncChange(table: "person", id: person, op: .update, values: ["city": .text("Oslo")])],
                            [SyncChange(table: "person", id: "zed", op: .insert, values: ["first_name": .text("Zed"), "last_name": .text("Z"), "nickname": .text("Zee")])]]
        for (index, changes) in transactions.enumerated() {
            let push = PushRequest(device: "tool", base: try await service.head(), transactions: [
                SyncTransaction(device: "tool", local: Int64(index + 1), clock: HybridClock(date: Date()), changes: changes),
            ])
            guard case .accepted = try await tool.push(push) else { throw ConformanceFailure("the tool's transaction \(index + 1) was not taken") }
        }
        // Every device syncs: the one that has been here, and a new one.
        let b = try Device(service, token: try await service.newToken())
        for (name, device) in [("a", a), ("b", b)] {
            let report = try await device.client.sync()
            try expect(report.pulled >= 3, "\(name) pulled \(report.pulled)")
            try expect(try device.rows("SELECT first_name, coalesce(city, '-') FROM person ORDER BY first_name") == ["Ada|Oslo"], "\(name)'s people: \(try device.rows("SELECT * FROM person"))")
            try expect(try device.rows("SELECT count(*) FROM package") == ["0"], "\(name) applied the quarantined package")
            let quarantined = try await device.client.quarantined()
            try expect(quarantined.count == 2 && quarantined.first?.error.contains("CHECK constraint failed") == true && quarantined.last?.error.contains("nickname") == true,
                       "\(name) quarantined \(quarantined)")
            let counted = await device.client.snapshot.quarantinedCount
            try expect(counted == 2, "\(name)'s snapshot counts \(counted) quarantined")
            // Each is in the conflict inbox too, naming what it was about and why.
            let inbox = try SyncClient.conflicts(in: device.store)
            try expect(inbox.map(\.kind) == [.quarantined, .quarantined] && inbox.map(\.lost.device) == ["tool", "tool"]
                       && inbox.map(\.table) == ["package", "person"] && inbox.map(\.seq) == quarantined.map(\.transaction.seq)
                       && inbox.first?.detail?.contains("CHECK constraint failed") == true && inbox.last?.detail?.contains("nickname") == true,
                       "\(name)'s inbox: \(inbox)")
        }
        // Reported by the CLI without contacting the service.
        let cli = CommandRunner()
        let status = try cli.run(["sync", "status", "--db", b.database.path])
        try expect(status.status == 0 && status.stdout.contains("quarantined 2 transactions"), "sync status: \(status)")
        let listed = try cli.run(["sync", "quarantine", "--db", b.database.path])
        try expect(listed.stdout.contains("CHECK constraint failed") && listed.stdout.contains("nickname"), "sync quarantine: \(listed)")
        // Resolved: B's migration adds the column, and the retry applies that transaction;
        // the CHECK one stays until discarded.
        try b.sql("ALTER TABLE person ADD COLUMN nickname TEXT")
        let retried = try cli.run(["sync", "quarantine", "--retry", "--db", b.database.path])
        try expect(retried.status == 0 && retried.stdout.contains("applied 1 of 2"), "sync quarantine --retry: \(retried)")
        try expect(try b.rows("SELECT first_name, nickname FROM person WHERE nickname IS NOT NULL") == ["Zed|Zee"], "the retried transaction is not applied")
        let discarded = try cli.run(["sync", "quarantine", "--discard", "--db", b.database.path])
        try expect(discarded.stdout.contains("discarded 1 transaction"), "sync quarantine --discard: \(discarded)")
        try expect(try SyncClient.quarantined(in: b.store, configuration: SyncConfiguration(tables: DemoSchema.syncedTables)).isEmpty, "still quarantined")
        try expect(try SyncClient.conflicts(in: b.store).isEmpty, "b's inbox after the retry and the discard: \(try SyncClient.conflicts(in: b.store))")
        // On A, restoring the nickname's record from the inbox fails as before (no such column
        // here) and keeps it; dismissing it discards that transaction alone.
        let records = try SyncClient.conflicts(in: a.store)
        guard records.count == 2, let check = records.first, let nickname = records.last else { throw ConformanceFailure("a's inbox: \(records)") }
        do {
            try await a.client.restore(nickname)
            throw ConformanceFailure("a transaction naming a column A does not have was applied")
        } catch let error as StoreError {
            try expect(error.code == .unknownColumn, "\(error)")
        }
        let dismissed = try cli.run(["sync", "conflicts", "--dismiss", "\(check.id ?? 0)", "--db", a.database.path])
        try expect(dismissed.status == 0, "sync conflicts --dismiss: \(dismissed)")
        let left = try SyncClient.quarantined(in: a.store, configuration: SyncConfiguration(tables: DemoSchema.syncedTables))
        try expect(left.map(\.transaction.seq) == [nickname.seq] && (try SyncClient.conflicts(in: a.store)).map(\.id) == [nickname.id],
                   "a after dismissing the CHECK one: \(left), \(try SyncClient.conflicts(in: a.store))")
        // Syncing goes on both ways.
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ann', 'A')")
        try await a.client.sync()
        try await b.client.sync()
        try expect(try b.rows("SELECT first_name FROM person ORDER BY first_name") == ["Ada", "Ann", "Zed"], "b's people: \(try b.rows("SELECT first_name FROM person"))")
    }
}
