import Foundation
import SluiceMacros
import SluiceTestSupport
import Testing

enum Urgency: String, Codable, Sendable, SQLiteValueConvertible { case low, high }

@Table("chat_message")
struct ChatMessage {
    var id: Int64?
    var conversationID: Int64
    var sender: String
    var sentAt: Date
    var isRead: Bool = false
    var urgency: Urgency = .low
    var score: Double = -1.5
    var tags: [String] = []
    var note: String?
    var attachment: Data?
}

/// The same table a version earlier: without the columns added since.
@Table("chat_message")
struct ChatMessageV1 {
    var id: Int64?
    var conversationID: Int64
    var sender: String
    var sentAt: Date
}

/// A later version that adds a column every row must have, with no default.
@Table("chat_message")
struct ChatMessageNeedsValue {
    var id: Int64?
    var sender: String
    var editedBy: String
}

@Table("chat_room")
struct ChatRoom {
    var id: Int64?
    var title: String
}

/// Indexes and foreign keys where the model declares them.
@Table("chat_post")
struct ChatPost {
    var id: Int64?
    @References(ChatRoom.self, onDelete: .cascade) @Indexed var roomID: Int64
    @Indexed var sentAt: Date
    @References(ChatRoom.self, onDelete: .setNull) var movedFromID: Int64?
}

/// A migration made from a model creates the table its declarations say,
/// exactly as the SQL one writes by hand; a later one adds what a model
/// grew; a store that opens with its models checks them against the tables,
/// naming model, property and column.
@Suite(.timeLimit(.minutes(10))) struct ModelMigrationTests {
    static let handWritten = """
        CREATE TABLE "chat_message" (
            "id" INTEGER PRIMARY KEY,
            "conversation_id" INTEGER NOT NULL,
            "sender" TEXT NOT NULL,
            "sent_at" TEXT NOT NULL,
            "is_read" INTEGER NOT NULL DEFAULT 0,
            "urgency" TEXT NOT NULL DEFAULT 'low',
            "score" REAL NOT NULL DEFAULT -1.5,
            "tags" TEXT NOT NULL DEFAULT '[]',
            "note" TEXT,
            "attachment" BLOB
        )
        """

    static func tableInfo(_ store: Store) throws -> [[SQLiteValue]] {
        try store.read { db in try db.fetchRows(sql: "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info('chat_message')").map(\.values) }
    }

    @Test func theModelsTableIsTheHandWrittenOne() throws {
        let migration = Migration.table(for: ChatMessage.self, version: 1)
        #expect(migration.sql == Self.handWritten)
        #expect(migration.identifier == "001_table_chat_message")
        let made = try Store.inMemory(migrations: [migration])
        let written = try Store.inMemory(migrations: [Migration(version: 1, name: "chat", sql: Self.handWritten)])
        #expect(try Self.tableInfo(made) == (try Self.tableInfo(written)))
        // It reads and writes the model, defaults filled in by SQLite where SQL leaves them out.
        let message = try made.write { tx in
            try tx.insert(ChatMessage(conversationID: 1, sender: "ana", sentAt: Date(timeIntervalSince1970: 0), tags: ["a"]))
        }
        try made.write { tx in try tx.execute(sql: "INSERT INTO chat_message (conversation_id, sender, sent_at, tags) VALUES (2, 'bo', '2026-01-01 00:00:00.000', '[]')") }
        let read = try made.read { db in try db.fetchAll(ChatMessage.self, orderBy: [Ordering("id")]) }
        #expect(read.map(\.id) == [message.id, 2])
        #expect(read.last.map { ($0.isRead, $0.urgency, $0.score, $0.note) } ?? (true, .high, 0, "") == (false, .low, -1.5, nil))
    }

    @Test func indexesAndForeignKeysWhereTheModelDeclaresThem() throws {
        let migration = Migration.table(for: ChatPost.self, version: 2)
        #expect(migration.sql == """
            CREATE TABLE "chat_post" (
                "id" INTEGER PRIMARY KEY,
                "room_id" INTEGER NOT NULL REFERENCES "chat_room" ("id") ON DELETE CASCADE,
                "sent_at" TEXT NOT NULL,
                "moved_from_id" INTEGER REFERENCES "chat_room" ("id") ON DELETE SET NULL
            );
            CREATE INDEX IF NOT EXISTS "chat_post_room_id" ON "chat_post" ("room_id");
            CREATE INDEX IF NOT EXISTS "chat_post_sent_at" ON "chat_post" ("sent_at")
            """)
        let store = try Store.inMemory(migrations: [Migration.table(for: ChatRoom.self, version: 1), migration])
        let indexes = try store.read { db in try db.fetchRows(sql: "SELECT name FROM pragma_index_list('chat_post') ORDER BY name").map { $0[0] } }
        #expect(indexes == [.text("chat_post_room_id"), .text("chat_post_sent_at")])
        let keys = try store.read { db in try db.fetchRows(sql: "SELECT \"from\", \"table\", \"to\", on_delete FROM pragma_foreign_key_list('chat_post') ORDER BY \"from\"").map(\.values) }
        #expect(keys == [[.text("moved_from_id"), .text("chat_room"), .text("id"), .text("SET NULL")],
                         [.text("room_id"), .text("chat_room"), .text("id"), .text("CASCADE")]])
        // The keys hold: deleting a room deletes its posts and clears the posts moved from it.
        try store.write { tx in
            let kitchen = try tx.insert(ChatRoom(title: "kitchen")), hall = try tx.insert(ChatRoom(title: "hall"))
            _ = try tx.insert(ChatPost(roomID: kitchen.id ?? 0, sentAt: Date(), movedFromID: nil))
            _ = try tx.insert(ChatPost(roomID: hall.id ?? 0, sentAt: Date(), movedFromID: kitchen.id))
            try tx.delete(ChatRoom.self, id: kitchen.id ?? 0)
        }
        let posts = try store.read { db in try db.fetchAll(ChatPost.self) }
        #expect(posts.count == 1 && posts.first?.movedFromID == nil)
    }

    @Test func aLaterMigrationAddsTheColumnsAModelGrew() throws {
        let database = TemporaryDatabase()
        let old = try Store(path: database.path, migrations: [Migration.table(for: ChatMessageV1.self, version: 1)])
        try old.write { tx in try tx.insert(ChatMessageV1(conversationID: 1, sender: "ana", sentAt: Date(timeIntervalSince1970: 0))) }
        // The app's next version: the first migration now makes the whole model (its checksum names
        // the table, so it is not "changed"); the second adds what the old file lacks.
        let migrations = [Migration.table(for: ChatMessage.self, version: 1), Migration.table(for: ChatMessage.self, version: 2)]
        let upgraded = try Store(path: database.path, migrations: migrations, models: [ChatMessage.self])
        let fresh = try Store.inMemory(migrations: migrations)
        #expect(Set(try Self.tableInfo(upgraded).map { $0[0] }) == Set(try Self.tableInfo(fresh).map { $0[0] }))
        let kept = try upgraded.read { db in try db.fetchAll(ChatMessage.self) }
        #expect(kept.map(\.sender) == ["ana"] && kept.first?.urgency == .low)
        #expect(try upgraded.appliedMigrations().map(\.identifier) == ["001_table_chat_message", "002_table_chat_message"])
    }

    @Test func aColumnThatCannotBeAddedIsRefusedNamingIt() throws {
        let database = TemporaryDatabase()
        let old = try Store(path: database.path, migrations: [Migration.table(for: ChatMessageV1.self, version: 1)])
        let before = try dump(old)
        let error = try #require(throws: StoreError.self) {
            try Store(path: database.path, migrations: [Migration.table(for: ChatMessageV1.self, version: 1),
                                                        Migration.table(for: ChatMessageNeedsValue.self, version: 2)])
        }
        #expect(error.code == .migration)
        #expect(error.message.contains("edited_by") && error.message.contains("editedBy") && error.message.contains("ChatMessageNeedsValue"), "\(error.message)")
        #expect(try dump(old) == before, "the database stays as it was")
    }

    @Test func aStoreChecksItsModelsWhenItOpens() throws {
        let missingColumn = Migration(version: 1, name: "chat", sql: "CREATE TABLE chat_message (id INTEGER PRIMARY KEY, conversation_id INTEGER, sender TEXT, sent_at TEXT)")
        let column = try #require(throws: StoreError.self) {
            try Store(path: ":memory:", migrations: [missingColumn], models: [ChatMessage.self])
        }
        #expect(column.code == .unknownColumn)
        #expect(column.message.hasPrefix("model ChatMessage, property isRead: table chat_message has no column is_read (columns: id, conversation_id"), "\(column.message)")

        let wrongType = Migration(version: 1, name: "chat", sql: "CREATE TABLE chat_message (id INTEGER PRIMARY KEY, conversation_id TEXT, sender TEXT, sent_at TEXT)")
        let type = try #require(throws: StoreError.self) {
            try Store(path: ":memory:", migrations: [wrongType], models: [ChatMessageV1.self])
        }
        #expect(type.code == .typeMismatch)
        #expect(type.message.contains("model ChatMessageV1, property conversationID (INTEGER): column conversation_id of table chat_message is declared TEXT"), "\(type.message)")

        let table = try #require(throws: StoreError.self) { try Store(path: ":memory:", migrations: [], models: [ChatMessageV1.self]) }
        #expect(table.code == .unknownTable && table.message.hasPrefix("model ChatMessageV1: the database has no table chat_message"), "\(table.message)")

        // What agrees opens.
        _ = try Store(path: ":memory:", migrations: [Migration.table(for: ChatMessage.self, version: 1)], models: [ChatMessage.self, ChatMessageV1.self])
    }
}
