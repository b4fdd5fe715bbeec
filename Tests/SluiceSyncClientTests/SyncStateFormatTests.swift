import Foundation
import SluiceDemo
@testable import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// The device's sync tables are a persisted format: numbered migrations on their own track,
/// a file synced by earlier code upgraded in place, a file of a newer client refused.
@Suite(.timeLimit(.minutes(10))) struct SyncStateFormatTests {
    /// A device's store file written by the client at 70633f9 (before the sync tables were
    /// versioned), after syncing with another device through a real service: it pushed a
    /// row deleted and inserted again on one rowid, pulled an edit, and holds two
    /// transactions it has not pushed (an edit of a pulled person, a new person).
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/synced-device-70633f9.sqlite")
    static let fixtureDevice = "7261c212-133f-413f-9c90-9840ee45a2cc"
    static let server = URL(string: "http://127.0.0.1:9")!  // never reached: nothing here syncs

    let configuration = SyncConfiguration(tables: DemoSchema.syncedTables)

    /// A copy of the fixture in a temporary folder, recorded as the file its sync state was
    /// written in (a copy elsewhere is another device, which takes a new id: not tested here).
    func copyOfFixture(_ edit: (PlainConnection) throws -> Void = { _ in }) throws -> TemporaryDatabase {
        let database = TemporaryDatabase()
        try FileManager.default.copyItem(at: Self.fixture, to: URL(fileURLWithPath: database.path))
        let plain = PlainConnection(path: database.path)
        let identity = try #require(FileIdentity.of(path: database.path))
        try plain.execute("UPDATE sluice_sync_state SET value = '\(identity)' WHERE key = 'file'")
        try edit(plain)
        return database
    }

    /// Each sync table's columns (name, type, NOT NULL, default, key position) and indexes.
    func syncTables(_ path: String) throws -> [String] {
        let plain = PlainConnection(path: path)
        var lines: [String] = []
        for row in try plain.rows("SELECT name, type FROM sqlite_master WHERE (name LIKE 'sluice_sync_%' OR name LIKE 'sluice_live_sync_%') AND name <> 'sluice_sync_migration' ORDER BY name") {
            guard case .text(let name) = row[0], case .text(let type) = row[1] else { continue }
            if type == "index" { lines.append("index \(name)"); continue }
            let columns = try plain.rows("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info('\(name)')")
            lines.append("\(name): " + columns.map { $0.map { "\($0)" }.joined(separator: " ") }.joined(separator: ", "))
        }
        return lines
    }

    func freshDeviceTables() throws -> [String] {
        let fresh = TemporaryDatabase()
        let store = try fresh.store(migrations: DemoSchema.migrations)
        _ = try SyncClient(store: store, server: Self.server, token: "t", configuration: configuration)
        return try syncTables(fresh.path)
    }

    /// The fixture's sync state as the engine reads it after the upgrade.
    func expectFixtureState(_ store: Store) throws {
        let engine = SyncEngine(configuration: configuration)
        try store.read { db in try engine.loadTables(db) }
        let state = try #require(try store.read { db in try engine.loadState(db) })
        #expect(state.cursor == 5)
        #expect(state.pushed == 5)
        let unpushed = try store.read { db in try engine.unpushed(state, db) }
        #expect(unpushed.map { $0.1.map(\.table) } == [["person"], ["person"]])
        #expect(unpushed.map { $0.1.map(\.operation) } == [[.update], [.insert]])
        #expect(try store.read { db in try db.fetchCount(table: "sluice_sync_id") } == 4)
    }

    @Test("a store synced by the unversioned client opens in place: its device, cursor, ids and unpushed transactions kept")
    func upgradesAFileTheUnversionedClientWrote() async throws {
        let database = try copyOfFixture()
        #expect(try PlainConnection(path: database.path).rows("SELECT count(*) FROM sqlite_master WHERE name = 'sluice_sync_migration'") == [[.integer(0)]])
        try await expectUpgraded(database)
    }

    /// The fixture's copy at `database` opened by this client: every migration applied, its
    /// state kept, an empty inbox, and nothing of the format differing from a new device's.
    func expectUpgraded(_ database: TemporaryDatabase) async throws {
        let store = try Store(path: database.path)
        let client = try SyncClient(store: store, server: Self.server, token: "t", configuration: configuration)
        #expect(try store.appliedMigrations(recordedIn: SyncStateFormat.track).map(\.version) == [1, 2, 3])
        #expect(try await client.deviceID == Self.fixtureDevice)
        #expect(try await client.pendingChangeCount() == 2)
        try expectFixtureState(store)
        #expect(try client.conflicts.fetch().isEmpty)
        #expect(try syncTables(database.path) == (try freshDeviceTables()))
    }

    @Test("a store at format 1 (before the conflict inbox and the origins of pulled transactions) gains both, empty, and keeps its state")
    func upgradesAFileOfFormatOne() async throws {
        // The fixture as the client before the inbox left it: migration 1, unchanged since, applied alone.
        let database = try copyOfFixture()
        let old = try Store(path: database.path)
        try old.migrate(Array(SyncStateFormat.migrations.prefix(1)), recordedIn: SyncStateFormat.track)
        #expect(try old.appliedMigrations(recordedIn: SyncStateFormat.track).map(\.version) == [1])
        #expect(try PlainConnection(path: database.path).rows("SELECT count(*) FROM sqlite_master WHERE name = 'sluice_live_sync_conflict'") == [[.integer(0)]])
        #expect(try SyncClient.conflicts(in: old).isEmpty, "a store without the inbox reads as an empty one")
        try await expectUpgraded(database)
    }

    @Test("a file from before two columns existed (stamp.acked, fixup.ref) gets them on adoption")
    func adoptsAFileOlderThanTwoColumns() throws {
        let database = try copyOfFixture { plain in
            // The two tables as the client first made them.
            try plain.execute("""
                DROP TABLE sluice_sync_stamp;
                CREATE TABLE sluice_sync_stamp (seq INTEGER PRIMARY KEY, clock INTEGER NOT NULL);
                DROP TABLE sluice_sync_fixup;
                CREATE TABLE sluice_sync_fixup (tbl TEXT NOT NULL, gid TEXT NOT NULL, col TEXT NOT NULL, PRIMARY KEY (tbl, gid, col));
                """)
        }
        let store = try Store(path: database.path)
        _ = try SyncClient(store: store, server: Self.server, token: "t", configuration: configuration)
        #expect(try syncTables(database.path) == (try freshDeviceTables()))
    }

    @Test("a file whose sync tables a newer client migrated is refused, and left as it was")
    func refusesANewerFormat() throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: DemoSchema.migrations)
        _ = try SyncClient(store: store, server: Self.server, token: "t", configuration: configuration)
        try store.write { db in
            try db.execute(sql: "INSERT INTO sluice_sync_migration (version, name, checksum, applied_at) VALUES (4, 'from_a_newer_client', 'x', '2027-01-01')")
        }
        let before = try syncTables(database.path)
        let error = #expect(throws: StoreError.self) {
            _ = try SyncClient(store: store, server: Self.server, token: "t", configuration: configuration)
        }
        #expect(error?.code == .databaseTooNew)
        #expect(error?.message.contains("from_a_newer_client") == true)
        #expect(try syncTables(database.path) == before)
    }
}
