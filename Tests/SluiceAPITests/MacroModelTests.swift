import Foundation
import SluiceMacros
import Testing

@Suite(.timeLimit(.minutes(10))) struct MacroModelTests {
    @Test func aMacroModelIsStoredColumnByColumn() throws {
        let store = try Store.inMemory(migrations: schema)
        #expect(TaskItem.tableName == "task_item")
        #expect(TaskItem.columnName(for: \TaskItem.isDone) == "done")
        #expect(TaskItem.columnName(for: \TaskItem.projectID) == "project_id")
        #expect(TaskItem.columnName(for: \TaskItem.isUrgent) == nil)
        #expect(TaskItem.columnName(for: \TaskItem.isSelected) == nil)
        let owner = UUID()
        let due = Date(timeIntervalSince1970: 1_800_000_000.25)
        var written = try store.write { tx in
            try tx.insert(task("Write", priority: .high, due: due, owner: owner))
        }
        #expect(written.id == 1)   // didInsert(rowID:), derived
        // The model's ID can be named in its own module (Swift 6.3 took the inferred one
        // for SPI: "'ID' is inaccessible due to '@_spi' protection level").
        let id: TaskItem.ID = written.id
        #expect(id == 1)
        // The columns hold what a plain SQL reader expects: the enum's raw value, JSON for the array, 0/1.
        let row = try #require(try store.read { db in try db.fetchRows(sql: "SELECT * FROM task_item") }.first)
        #expect(row["priority"] == .text("high"))
        #expect(row["done"] == .integer(0))
        #expect(row["tags"] == .text(#"["write"]"#))
        #expect(row["owner_id"] == .text(owner.uuidString))
        #expect(try store.read { db in try db.fetchAll(TaskItem.self) } == [written])

        written.isDone = true
        written.isSelected = true   // not a column: not stored, read back as its default
        try store.write { tx in try tx.update(written) }
        let updated = try store.write { tx in try tx.update(TaskItem.self, id: 1) { $0.tags.append("later") } }
        #expect(updated.tags == ["write", "later"])
        let stored = try #require(try store.read { db in try db.fetchOne(TaskItem.self, id: 1) })
        #expect(stored.isDone && !stored.isSelected && stored.tags == ["write", "later"] && stored.dueAt == due)
        try store.write { tx in _ = try tx.upsert(TaskItem(id: 1, projectID: 2, title: "Upserted", priority: .low, isDone: false, tags: [])) }
        #expect(try store.read { db in try db.fetchOne(TaskItem.self, id: 1)?.title } == "Upserted")
    }

    @Test func aCodableOnlyModelStillWorks() throws {
        let store = try Store.inMemory(migrations: schema)
        let note = try store.write { tx in try tx.insert(Note(title: "Plain", createdAt: Date(timeIntervalSince1970: 5))) }
        #expect(try store.objects(Note.self).fetch() == [note])
        // Typed key paths need @Table: the error names the key path.
        #expect(throws: StoreError.self) { try store.objects(Note.self).filter(\.title == "Plain").fetch() }
        let error = try #require(throws: StoreError.self) { try store.objects(Note.self).sorted(by: \.title).fetch() }
        #expect(error.code == .unknownColumn && error.message.contains("Note") && error.message.contains("@Table"))
    }

    @Test func aWrongValueInAColumnNamesTheColumn() throws {
        let store = try Store.inMemory(migrations: schema)
        try store.write { tx in
            try tx.execute(sql: "INSERT INTO task_item VALUES (1, 'one', 'Bad', 'low', NULL, NULL, 0, '[]')")
        }
        let error = try #require(throws: StoreError.self) { try store.objects(TaskItem.self).fetch() }
        #expect(error.code == .decoding && error.message.contains("project_id") && error.message.contains("task_item"))
    }
}
