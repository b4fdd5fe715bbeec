import Foundation
import SluiceMacros
import Testing

/// Key paths and Swift names: the same rows as the query strings they stand for.
@Suite(.timeLimit(.minutes(10))) struct TypedQueryTests {
    @Test func typedFiltersMatchTheirQueryStrings() throws {
        let store = try Store.inMemory(migrations: schema)
        let owner = UUID()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        try store.write { tx in
            for index in 0..<40 {
                try tx.insert(task(
                    "Task \(index)", project: Int64(index % 4), priority: index % 3 == 0 ? .high : .low,
                    due: index % 5 == 0 ? nil : now.addingTimeInterval(Double(index) * 3600),
                    owner: index % 7 == 0 ? owner : nil, done: index % 2 == 0))
            }
        }
        let tasks = store.objects(TaskItem.self)
        func ids(_ results: Results<TaskItem>) throws -> [Int64?] { try results.fetch().map(\.id) }
        let pairs: [(Results<TaskItem>, Results<TaskItem>)] = [
            (tasks.filter(\.projectID >= 2 && \.isDone == false), try tasks.filter("project_id >= 2 AND done == false")),
            (tasks.filter(\.priority == .high || \.ownerID == owner), try tasks.filter("priority == 'high' OR owner_id == $0", owner)),
            (tasks.filter(\.dueAt == nil), try tasks.filter("due_at == nil")),
            (tasks.filter(\.dueAt > now.addingTimeInterval(20 * 3600)), try tasks.filter("due_at > $0", now.addingTimeInterval(20 * 3600))),
            (tasks.filter(!(\.projectID < 3)), try tasks.filter("NOT project_id < 3")),
            (tasks.where { $0.projectID.in([1, 3]) && $0.title.beginsWith("task 1", caseInsensitive: true) },
             try tasks.filter("projectID IN {1, 3} AND title BEGINSWITH[c] 'task 1'")),
            (tasks.where { $0.projectID.between(1, 2) && $0.title.contains("2") }, try tasks.filter("project_id BETWEEN {1, 2} AND title CONTAINS '2'")),
            // Bool properties are filters of their own, as in SwiftData and sqlite-data.
            (tasks.where { !$0.isDone }, try tasks.filter("done == false")),
            (tasks.where { $0.isDone }, try tasks.filter("done == true")),
            (tasks.where { $0.isDone && $0.projectID == 2 }, try tasks.filter("done == true AND project_id == 2")),
            (tasks.where { $0.projectID == 1 || !$0.isDone }, try tasks.filter("project_id == 1 OR done == false")),
            (tasks.filter(\.isDone), try tasks.filter("done == true")),
            (tasks.filter(!\.isDone), try tasks.filter("done == false")),
            (tasks.filter(\.projectID == 3 && !\.isDone), try tasks.filter("project_id == 3 AND done == false")),
        ]
        for (typed, string) in pairs {
            let expected = try ids(string)
            #expect(!expected.isEmpty)
            #expect(try ids(typed) == expected)
        }
        // Sorting by key path, Swift names in strings, and by column name agree.
        #expect(try ids(tasks.sorted(by: \.projectID, ascending: false)) == ids(tasks.sorted(byKeyPath: "projectID", ascending: false)))
        #expect(try ids(tasks.sorted(by: \.dueAt)) == ids(tasks.sorted(byKeyPath: "due_at")))
        // Several keys, most significant first.
        let byProjectThenTitle = try ids(tasks.sorted(by: \.projectID, \.title, ascending: false))
        #expect(byProjectThenTitle == (try ids(tasks.sorted(by: [Ordering("project_id", descending: true), Ordering("title", descending: true)]))))
    }

    @Test func aKeyPathThatIsNotAColumnIsNamedInTheError() throws {
        let store = try Store.inMemory(migrations: schema)
        let error = try #require(throws: StoreError.self) { try store.objects(TaskItem.self).filter(\.isUrgent == true).fetch() }
        #expect(error.code == .unknownColumn && error.message.contains("is not a column of TaskItem") && error.message.contains("stored properties"))
    }

    @Test func observingKeyPathsCountsOnlyTheirChangesAsModifications() throws {
        let store = try Store.inMemory(migrations: schema)
        try store.write { tx in
            try tx.insert(task("A"))
            try tx.insert(task("B"))
        }
        let deliveries = Deliveries<String>()
        let token = store.objects(TaskItem.self).sorted(by: \.title).observe(keyPaths: [\.isDone], on: deliveries.queue) { change in
            if case .update(_, let deletions, let insertions, let modifications) = change {
                deliveries.append("\(deletions) \(insertions) \(modifications)")
            } else if case .initial = change {
                deliveries.append("initial")
            }
        }
        deliveries.wait(for: 1)
        try store.write { tx in try tx.update(TaskItem.self, id: 1) { $0.tags = ["x"] } }   // not observed: nothing
        try store.write { tx in try tx.update(TaskItem.self, id: 2) { $0.isDone = true } }  // observed
        deliveries.wait(for: 2)
        #expect(deliveries.settle(store) == ["initial", "[] [] [1]"])
        token.invalidate()
    }

    @Test func propertyChangesAreTypedByKeyPath() throws {
        let store = try Store.inMemory(migrations: schema)
        try store.write { tx in _ = try tx.insert(task("A", priority: .low)) }
        let deliveries = Deliveries<String>()
        let token = store.observe(TaskItem.self, id: 1, on: deliveries.queue) { change in
            guard case .change(_, let properties) = change else { return }
            do {
                let title = try properties.values(of: \TaskItem.title)
                let priority = try properties.values(of: \TaskItem.priority)
                let due = try properties.values(of: \TaskItem.dueAt)
                let done = try properties.first { $0.name == "done" }?.newValue(as: \TaskItem.isDone)
                deliveries.append([
                    title.map { "title \($0.old)→\($0.new)" }, priority.map { "priority \($0.old.rawValue)→\($0.new.rawValue)" },
                    due.map { "due \(String(describing: $0.old))→\(String(describing: $0.new))" }, done.map { "done \($0)" },
                ].compactMap { $0 }.joined(separator: ", "))
            } catch {
                deliveries.append("\(error)")
            }
        }
        // The observation starts on its queue: change the title until it reports one.
        var attempt = 0
        while deliveries.all.isEmpty, attempt < 500 {
            attempt += 1
            try store.write { tx in try tx.update(TaskItem.self, id: 1) { $0.title = "A\(attempt)" } }
            Thread.sleep(forTimeInterval: 0.01)
        }
        deliveries.wait(for: 1)
        let primed = deliveries.settle(store).count
        try store.write { tx in try tx.update(TaskItem.self, id: 1) { $0.priority = .high; $0.isDone = true } }
        let due = Date(timeIntervalSince1970: 86_400)
        try store.write { tx in try tx.update(TaskItem.self, id: 1) { $0.dueAt = due } }
        deliveries.wait(for: primed + 2)
        let all = deliveries.settle(store)
        #expect(all.first?.hasPrefix("title A") == true)
        #expect(Array(all.dropFirst(primed)) == ["priority low→high, done true", "due nil→Optional(\(due))"])
        token.invalidate()
    }
}

@Suite(.timeLimit(.minutes(10))) struct TypedObjectObservationTests {
    @Test func anObjectObservedByKeyPathsReportsOnlyThoseProperties() throws {
        let store = try Store.inMemory(migrations: schema)
        try store.write { tx in _ = try tx.insert(task("A")) }
        let deliveries = Deliveries<String>()
        let token = store.observe(TaskItem.self, id: 1, keyPaths: [\.isDone], on: deliveries.queue) { change in
            if case .change(let item, let properties) = change {
                deliveries.append("\(item.isDone) \(properties.map(\.name))")
            }
        }
        // Until the observation has started, a change to `done` may be its first reading: flip it until one arrives.
        var attempt = 0
        while deliveries.all.isEmpty, attempt < 500 {
            attempt += 1
            try store.write { tx in try tx.update(TaskItem.self, id: 1) { $0.isDone.toggle() } }
            Thread.sleep(forTimeInterval: 0.01)
        }
        deliveries.wait(for: 1)
        let primed = deliveries.settle(store).count
        try store.write { tx in try tx.update(TaskItem.self, id: 1) { $0.title = "B" } }      // not observed
        try store.write { tx in try tx.update(TaskItem.self, id: 1) { $0.isDone = !$0.isDone } }
        deliveries.wait(for: primed + 1)
        let all = deliveries.settle(store)
        #expect(all.count == primed + 1)
        #expect(all.last?.hasSuffix(#"["done"]"#) == true)
        token.invalidate()

        let failing = Deliveries<String>()
        let bad = store.observe(TaskItem.self, id: 1, keyPaths: [\.isUrgent], on: failing.queue) { change in
            if case .error(let error) = change { failing.append("\(error.code)") }
        }
        #expect(failing.wait(for: 1) == ["unknownColumn (1002)"])
        bad.invalidate()
    }
}
