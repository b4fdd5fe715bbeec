import Foundation
import SluiceMacros
import Testing

enum Priority: String, Codable, SQLiteValueConvertible { case low, high }

@Table
struct TaskItem: Hashable {
    var id: Int64?
    var projectID: Int64
    var title: String
    var priority: Priority
    var dueAt: Date?
    @ColumnName("done") var isDone: Bool
    var tags: [String]
    @Transient var isSelected = false
}

@Suite struct MacroModelTests {
    @Test func aMacroModelRoundTrips() throws {
        let store = try Store.inMemory(migrations: [
            Migration(version: 1, name: "tasks", sql: "CREATE TABLE task_item (id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL, title TEXT NOT NULL, priority TEXT NOT NULL, due_at TEXT, done INTEGER NOT NULL, tags TEXT NOT NULL)")
        ])
        #expect(TaskItem.tableName == "task_item")
        #expect(TaskItem.columnName(for: \TaskItem.isDone) == "done")
        let task = try store.write { tx in
            try tx.insert(TaskItem(projectID: 1, title: "Write", priority: .high, dueAt: nil, isDone: false, tags: ["a", "b"]))
        }
        #expect(task.id == 1)
        let read = try store.read { db in try db.fetchAll(TaskItem.self) }
        #expect(read == [task])
    }
}
