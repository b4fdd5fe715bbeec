import Foundation
import SluiceMacros

/// Records what an observation delivers, from its queue, for the test's thread.
final class Deliveries<Value: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `values` is only touched with `lock` held.
    private var values: [Value] = []
    private let lock = NSLock()
    let queue = DispatchQueue(label: "sluice.api-tests")

    func append(_ value: Value) {
        lock.lock()
        values.append(value)
        lock.unlock()
    }

    var all: [Value] {
        lock.lock()
        defer { lock.unlock() }
        return values
    }

    /// Waits until every commit so far reached this queue; returns what arrived.
    @discardableResult
    func settle(_ store: Store) -> [Value] {
        store.waitForObservers()   // the observation queue has handed everything to `queue`
        queue.sync {}
        return all
    }

    /// Waits (up to 10 s) until `count` values arrived; returns them.
    @discardableResult
    func wait(for count: Int) -> [Value] {
        let deadline = Date().addingTimeInterval(10)
        while all.count < count, Date() < deadline { Thread.sleep(forTimeInterval: 0.002) }
        queue.sync {}   // anything queued behind arrives too
        return all
    }
}

enum Priority: String, Codable, Hashable, SQLiteValueConvertible { case low, high }

/// A model written with the macro: enums, dates, UUIDs, optionals, JSON, a renamed column, a transient property.
@Table
struct TaskItem: Hashable {
    var id: Int64?
    var projectID: Int64
    var title: String
    var priority: Priority
    var dueAt: Date?
    var ownerID: UUID?
    @ColumnName("done") var isDone: Bool
    var tags: [String]
    @Transient var isSelected = false

    /// Not a column.
    var isUrgent: Bool { priority == .high && !isDone }
}

/// A model with Codable alone (no macro): it must keep working as before.
struct Note: Model, Hashable {
    static let tableName = "note"
    var id: Int64?
    var title: String
    var createdAt: Date
    mutating func didInsert(rowID: Int64) { id = rowID }
}

let schema = [
    Migration(version: 1, name: "tasks", sql: """
        CREATE TABLE task_item (id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL, title TEXT NOT NULL, priority TEXT NOT NULL,
                                due_at TEXT, owner_id TEXT, done INTEGER NOT NULL, tags TEXT NOT NULL);
        CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT NOT NULL, created_at TEXT NOT NULL);
        """),
]

func task(_ title: String, project: Int64 = 1, priority: Priority = .low, due: Date? = nil, owner: UUID? = nil, done: Bool = false) -> TaskItem {
    TaskItem(projectID: project, title: title, priority: priority, dueAt: due, ownerID: owner, isDone: done, tags: [title.lowercased()])
}
