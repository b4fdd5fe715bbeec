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

/// A migration made from a model creates the table its declarations say,
/// exactly as the SQL one writes by hand; a later one adds what a model
/// grew; a store that opens with its models checks them against the tables,
/// naming model, property and column.
@Suite struct ModelMigrationTests {
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
