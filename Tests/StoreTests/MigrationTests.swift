import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

@Suite(.timeLimit(.minutes(10))) struct MigrationTests {
    let first = Migration(version: 1, name: "create_item", sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL);")
    let second = Migration(version: 2, name: "add_price", sql: "ALTER TABLE item ADD COLUMN price REAL;")
    let third = Migration(version: 3, name: "index_price", sql: "CREATE INDEX item_by_price ON item (price);")

    @Test func migrationsApplyInVersionOrderOnce() throws {
        let database = TemporaryDatabase()
        let store = try database.store()
        let applied = try store.migrate([third, first, second])
        #expect(applied.map(\.version) == [1, 2, 3])
        #expect(try store.migrate([first, second, third]).isEmpty)
        let recorded = try store.appliedMigrations()
        #expect(recorded.map(\.version) == [1, 2, 3])
        #expect(recorded.map(\.checksum) == [first, second, third].map(\.checksum))
        #expect(try store.read { db in try db.tableInfo("item").columnNames } == ["id", "name", "price"])
    }

    @Test func laterMigrationsApplyToAnOlderDatabase() throws {
        let database = TemporaryDatabase()
        try database.store().migrate([first])
        let store = try Store(path: database.path, migrations: [first, second, third])
        #expect(try store.appliedMigrations().map(\.version) == [1, 2, 3])
    }

    @Test func editedAppliedMigrationIsRefused() throws {
        let database = TemporaryDatabase()
        let store = try database.store()
        try store.migrate([first, second])
        let before = try dump(store)
        let edited = Migration(version: 2, name: "add_price", sql: "ALTER TABLE item ADD COLUMN price INTEGER;")
        let error = try #require(throws: StoreError.self) { try store.migrate([first, edited, third]) }
        #expect(error.code == .migration)
        #expect(error.message.hasPrefix("migration 002_add_price.sql was changed after it was applied"))
        #expect(try dump(store) == before, "nothing after the refusal is applied")
    }

    @Test("a library's migrations keep a track of their own, numbered and checked apart from the app's")
    func migrationTracksAreIndependent() throws {
        let database = TemporaryDatabase()
        let store = try database.store()
        try store.migrate([first, second])
        let library = Migration(version: 1, name: "create_bookmark", sql: "CREATE TABLE reader_bookmark (id INTEGER PRIMARY KEY, page INTEGER);")
        #expect(try store.migrate([library], recordedIn: "reader_migration").map(\.version) == [1])
        #expect(try store.migrate([first, second, third]).map(\.version) == [3], "the app's track does not see the library's version 1")
        #expect(try store.appliedMigrations().map(\.name) == ["create_item", "add_price", "index_price"])
        #expect(try store.appliedMigrations(recordedIn: "reader_migration").map(\.name) == ["create_bookmark"])

        // The track's own checks: its newer version is refused, whatever the app's.
        let later = Migration(version: 2, name: "bookmark_note", sql: "ALTER TABLE reader_bookmark ADD COLUMN note TEXT;")
        try store.migrate([library, later], recordedIn: "reader_migration")
        let error = try #require(throws: StoreError.self) { try store.migrate([library], recordedIn: "reader_migration") }
        #expect(error.code == .databaseTooNew)
        #expect(error.message.contains("migration 2 (bookmark_note)"))

        let badName = try #require(throws: StoreError.self) { try store.migrate([library], recordedIn: "reader; DROP TABLE item") }
        #expect(badName.code == .invalidUse)
        #expect(try store.read { db in try db.tableExists("item") })
    }

    @Test func databaseNewerThanTheCodeIsRefused() throws {
        let database = TemporaryDatabase()
        try database.store().migrate([first, second, third])
        let error = try #require(throws: StoreError.self) { try Store(path: database.path, migrations: [first, second]) }
        #expect(error.code == .databaseTooNew)
        #expect(error.message.contains("the database is at migration 3 (index_price), newer than this code, which knows migrations up to 2"))
    }

    @Test func appliedMigrationMissingFromTheCodeIsRefused() throws {
        let database = TemporaryDatabase()
        try database.store().migrate([first, second, third])
        let error = try #require(throws: StoreError.self) { try database.store().migrate([first, third]) }
        #expect(error.code == .migration)
        #expect(error.message.contains("applied migration 2 (add_price), which is missing"))
    }

    @Test func failingMigrationLeavesTheDatabaseAtThePreviousVersion() throws {
        let database = TemporaryDatabase()
        let store = try database.store()
        try store.migrate([first])
        try store.write { tx in try tx.execute(sql: "INSERT INTO item (name) VALUES ('kept')") }
        let before = try dump(store)
        // Its first statement succeeds, its second fails: neither may stay.
        let broken = Migration(version: 2, name: "broken", sql: "CREATE TABLE extra (id INTEGER PRIMARY KEY); INSERT INTO missing_table VALUES (1);")
        let error = try #require(throws: StoreError.self) { try store.migrate([first, broken, third]) }
        #expect(error.code == .migration)
        #expect(error.message.hasPrefix("migration 002_broken.sql failed, the database stays at the previous version: no such table: missing_table"))
        #expect(try dump(store) == before)
        #expect(try store.appliedMigrations().map(\.version) == [1])
        // Fixing the migration lets it apply.
        #expect(try store.migrate([first, second]).map(\.version) == [2])
    }

    @Test func migrationsLoadFromADirectory() throws {
        let database = TemporaryDatabase()
        let folder = database.url("migrations")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try first.sql.write(to: folder.appendingPathComponent("001_create_item.sql"), atomically: true, encoding: .utf8)
        try second.sql.write(to: folder.appendingPathComponent("2_add_price.sql"), atomically: true, encoding: .utf8)
        try "notes".write(to: folder.appendingPathComponent("README.md"), atomically: true, encoding: .utf8)
        let loaded = try Migration.load(from: folder)
        #expect(loaded == [first, second])

        try "".write(to: folder.appendingPathComponent("x_bad.sql"), atomically: true, encoding: .utf8)
        let error = try #require(throws: StoreError.self) { try Migration.load(from: folder) }
        #expect(error.message.contains("x_bad.sql"))
        #expect(error.message.contains("is not named NNN_description.sql"))
    }

    @Test func duplicateVersionsInADirectoryAreRefused() throws {
        let database = TemporaryDatabase()
        let folder = database.url("migrations")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try first.sql.write(to: folder.appendingPathComponent("001_a.sql"), atomically: true, encoding: .utf8)
        try first.sql.write(to: folder.appendingPathComponent("01_b.sql"), atomically: true, encoding: .utf8)
        let error = try #require(throws: StoreError.self) { try Migration.load(from: folder) }
        #expect(error.message.contains("have the same version 1"))
    }

    /// Whatever a migration throws, its transaction is rolled back and the
    /// connection can write again (a non-StoreError once left it open).
    @Test func aMigrationFailingWithAnyErrorIsRolledBack() throws {
        struct Interrupted: Error {}
        let database = TemporaryDatabase()
        let db = Database(connection: try Connection(path: database.path, mode: .create), isReadOnly: false)
        var migrator = Migrator(migrations: [first])
        migrator.around = { _, body in
            try body()
            throw Interrupted()
        }
        #expect(throws: Interrupted.self) { try migrator.migrate(db) }
        #expect(!db.isInsideTransaction)
        #expect(try db.tableExists("item") == false)
        #expect(try Migrator(migrations: [first]).migrate(db).map(\.version) == [1])
        #expect(try db.tableExists("item"))
    }

    @Test func tableExistsFollowsTheSchemaWhoeverChangesIt() throws {
        let database = TemporaryDatabase()
        let store = try database.store()
        #expect(try store.read { db in try db.tableExists("item") } == false)
        try store.write { db in
            #expect(try db.tableExists("item") == false)
            try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY)")
            #expect(try db.tableExists("item"))
            #expect(try db.tableExists("ITEM"))
        }
        #expect(try store.read { db in try db.tableExists("Item") })
        // A table created in a transaction that rolls back does not exist after it.
        struct Undo: Error {}
        #expect(throws: Undo.self) {
            try store.write { db in
                try db.execute(sql: "CREATE TABLE draft (id INTEGER PRIMARY KEY)")
                #expect(try db.tableExists("draft"))
                throw Undo()
            }
        }
        #expect(try store.write { db in try db.tableExists("draft") } == false)
        // Another connection's schema changes are seen by the next transaction.
        let other = PlainConnection(path: database.path)
        try other.execute("DROP TABLE item; CREATE TABLE note (id INTEGER PRIMARY KEY)")
        #expect(try store.read { db in try db.tableExists("item") } == false)
        #expect(try store.read { db in try db.tableExists("note") })
        #expect(try store.write { db in try db.tableExists("note") && !db.tableExists("item") })
        #expect(try store.read { db in try db.tableExists("sluice_change") })
    }

    @Test func embeddedDemoSchemaMatchesTheMigrationsFolder() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("migrations")
        #expect(try Migration.load(from: folder) == DemoSchema.migrations)
    }

    @Test func demoSchemaHasTheDocumentedColumns() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let columns = try store.read { db in
            try ["person", "package", "package_content", "message", "app_state"].map { try db.tableInfo($0).columnNames }
        }
        #expect(columns == [
            ["id", "first_name", "last_name", "age", "email", "street", "city", "postal_code", "country"],
            ["id", "recipient_id", "sender_id", "created_at"],
            ["id", "package_id", "title", "weight", "position"],
            ["id", "conversation_id", "sender", "text", "sent_at"],
            ["id", "current_user_id", "temperature_low", "temperature_high"],
        ])
        let state = try store.read { db in try db.fetchOne(AppState.self, id: AppState.singletonID) }
        #expect(state == AppState())
    }
}
