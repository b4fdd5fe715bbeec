import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

/// Exact changeset sequences for scripted scenarios.
@Suite(.timeLimit(.minutes(10))) struct LiveQueryTests {
    /// Adults by first name: B(1) D(2) F(3) H(4); a child (5) outside the filter.
    static func fixture() throws -> (Store, ChangeRecorder<Person>) {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try store.write { tx in
            for (id, name, age) in [(1, "B", 20), (2, "D", 30), (3, "F", 40), (4, "H", 50), (5, "Kid", 10)] as [(Int64, String, Int)] {
                try tx.insert(Person(id: id, firstName: name, lastName: "X", age: age))
            }
        }
        let recorder = ChangeRecorder(try store.objects(Person.self).filter("age >= 18").sorted(byKeyPath: "first_name"))
        store.waitForObservers()
        let initial = recorder.take()
        #expect(initial.count == 1)
        if case .initial(let people)? = initial.first {
            #expect(people.map(\.firstName) == ["B", "D", "F", "H"])
        } else {
            Issue.record("expected .initial, got \(initial)")
        }
        return (store, recorder)
    }

    /// Runs a write, waits for delivery, returns the changesets and the final names.
    static func changes(_ store: Store, _ recorder: ChangeRecorder<Person>, _ body: (Database) throws -> Void) throws -> ([Changes], [String]) {
        try store.write(body)
        store.waitForObservers()
        let events = recorder.take()
        let names = events.last?.results.map { $0.map(\.firstName) } ?? []
        return (events.compactMap(Changes.init), names)
    }

    /// Rowids far apart, negative and huge (held outside the dense rowid array) and dense ones, in any order.
    @Test func sparseAndDenseRowIDsFollowChanges() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let ids: [Int64] = [-7, 3, 1 << 40, 2, Int64.max, 1, 70_000, -1, 500]
        let recorder = ChangeRecorder(store.objects(Person.self).sorted(byKeyPath: "first_name"))
        store.waitForObservers()
        var mirror: [Person] = []
        var random = SplitMix(seed: 5)
        for round in 0..<60 {
            let id = ids[random.next(ids.count)]
            try store.write { tx in
                switch random.next(3) {
                case 0: try tx.execute(sql: "INSERT OR REPLACE INTO person (id, first_name, last_name) VALUES (?, ?, 'X')", arguments: [.integer(id), .text("n\(random.next(20))")])
                case 1: try tx.execute(sql: "UPDATE person SET first_name = ? WHERE id = ?", arguments: [.text("m\(random.next(20))"), .integer(id)])
                default: try tx.execute(sql: "DELETE FROM person WHERE id = ?", arguments: [.integer(id)])
                }
            }
            store.waitForObservers()
            for change in recorder.take() { change.apply(to: &mirror) }
            #expect(mirror == (try store.objects(Person.self).sorted(byKeyPath: "first_name").fetch()), "round \(round)")
        }
    }

    @Test func insertInTheMiddle() throws {
        let (store, recorder) = try Self.fixture()
        let (changes, names) = try Self.changes(store, recorder) { tx in try tx.insert(Person(id: 6, firstName: "C", lastName: "X", age: 25)) }
        #expect(changes == [Changes(insertions: [1])])
        #expect(names == ["B", "C", "D", "F", "H"])
    }

    @Test func deleteFirstAndLast() throws {
        let (store, recorder) = try Self.fixture()
        let (changes, names) = try Self.changes(store, recorder) { tx in
            try tx.delete(Person.self, id: 1)
            try tx.delete(Person.self, id: 4)
        }
        #expect(changes == [Changes(deletions: [0, 3])])
        #expect(names == ["D", "F"])
    }

    @Test func updateThatMovesARowIsADeletionPlusAnInsertion() throws {
        let (store, recorder) = try Self.fixture()
        let (changes, names) = try Self.changes(store, recorder) { tx in
            try tx.execute(sql: "UPDATE person SET first_name = 'A' WHERE id = 3")
        }
        #expect(changes == [Changes(deletions: [2], insertions: [0], moves: [[2, 0]])])
        #expect(names == ["A", "B", "D", "H"])
    }

    @Test func sortKeyChangeThatKeepsThePositionIsAModification() throws {
        let (store, recorder) = try Self.fixture()
        let (changes, names) = try Self.changes(store, recorder) { tx in
            try tx.execute(sql: "UPDATE person SET first_name = 'E' WHERE id = 2")
        }
        #expect(changes == [Changes(modifications: [1])])
        #expect(names == ["B", "E", "F", "H"])
    }

    @Test func rowOutsideTheFilterEntersIt() throws {
        let (store, recorder) = try Self.fixture()
        let (changes, names) = try Self.changes(store, recorder) { tx in
            try tx.execute(sql: "UPDATE person SET age = 19 WHERE id = 5")
        }
        #expect(changes == [Changes(insertions: [4])])
        #expect(names == ["B", "D", "F", "H", "Kid"])
    }

    @Test func rowInsideTheFilterLeavesIt() throws {
        let (store, recorder) = try Self.fixture()
        let (changes, names) = try Self.changes(store, recorder) { tx in
            try tx.execute(sql: "UPDATE person SET age = 5 WHERE id = 2")
        }
        #expect(changes == [Changes(deletions: [1])])
        #expect(names == ["B", "F", "H"])
    }

    @Test func modificationUsesOldAndNewIndices() throws {
        let (store, recorder) = try Self.fixture()
        let (changes, _) = try Self.changes(store, recorder) { tx in
            try tx.execute(sql: "UPDATE person SET email = 'f@example.com' WHERE id = 3")
            try tx.insert(Person(id: 6, firstName: "A", lastName: "X", age: 30))
        }
        #expect(changes == [Changes(insertions: [0], modifications: [2], modificationsNew: [3])])
    }

    @Test func updateThatChangesNothingVisibleEmitsNothing() throws {
        let (store, recorder) = try Self.fixture()
        let (same, _) = try Self.changes(store, recorder) { tx in try tx.execute(sql: "UPDATE person SET age = age") }
        #expect(same.isEmpty)
        let (outside, _) = try Self.changes(store, recorder) { tx in try tx.execute(sql: "UPDATE person SET last_name = 'Y' WHERE id = 5") }
        #expect(outside.isEmpty, "a row outside the filter changed")
        let (otherTable, _) = try Self.changes(store, recorder) { tx in try tx.execute(sql: "UPDATE app_state SET temperature_high = 40") }
        #expect(otherTable.isEmpty)
        let (insertedAndDeleted, _) = try Self.changes(store, recorder) { tx in
            try tx.insert(Person(id: 9, firstName: "G", lastName: "X", age: 33))
            try tx.delete(Person.self, id: 9)
        }
        #expect(insertedAndDeleted.isEmpty)
    }

    @Test func severalChangesInOneTransactionAreOneEvent() throws {
        let (store, recorder) = try Self.fixture()
        let (changes, names) = try Self.changes(store, recorder) { tx in
            try tx.insert(Person(id: 6, firstName: "C", lastName: "X", age: 25))     // enters at 1
            try tx.delete(Person.self, id: 4)                                      // H leaves (old 3)
            try tx.execute(sql: "UPDATE person SET email = 'b@x' WHERE id = 1")    // B modified (old 0)
            try tx.execute(sql: "UPDATE person SET first_name = 'Z' WHERE id = 2") // D moves to the end
        }
        #expect(changes == [Changes(deletions: [1, 3], insertions: [1, 3], modifications: [0], moves: [[1, 3]])])
        #expect(names == ["B", "C", "F", "Z"])
    }

    @Test func rolledBackTransactionEmitsNothing() throws {
        struct Abort: Error {}
        let (store, recorder) = try Self.fixture()
        #expect(throws: Abort.self) {
            try store.write { tx in
                try tx.insert(Person(id: 6, firstName: "C", lastName: "X", age: 25))
                throw Abort()
            }
        }
        store.waitForObservers()
        #expect(recorder.take().isEmpty)
        // A savepoint rolled back inside a committed transaction: only the kept change shows.
        let (changes, names) = try Self.changes(store, recorder) { tx in
            try? store.write { inner in
                try inner.insert(Person(id: 7, firstName: "E", lastName: "X", age: 25))
                throw Abort()
            }
            try tx.insert(Person(id: 8, firstName: "G", lastName: "X", age: 25))
        }
        #expect(changes == [Changes(insertions: [3])])
        #expect(names == ["B", "D", "F", "G", "H"])
    }

    @Test func deleteAll() throws {
        let (store, recorder) = try Self.fixture()
        let (changes, names) = try Self.changes(store, recorder) { tx in try tx.execute(sql: "DELETE FROM person") }
        #expect(changes == [Changes(deletions: [0, 1, 2, 3])])
        #expect(names.isEmpty)
    }

    @Test func bulkInsertOfTenThousandRowsIsOneEvent() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let recorder = ChangeRecorder(store.objects(Person.self).sorted(byKeyPath: "age"))
        store.waitForObservers()
        _ = recorder.take()
        try store.write { tx in
            for index in 0..<10_000 { try tx.insert(Person(firstName: "P\(index)", lastName: "X", age: index % 97)) }
        }
        store.waitForObservers()
        let events = recorder.take()
        #expect(events.compactMap(Changes.init) == [Changes(insertions: Array(0..<10_000))])
        let ages = events.first?.results.map { $0.map { $0.age ?? -1 } } ?? []
        #expect(ages == ages.sorted())
        // Then a small change to the big result is incremental and exact.
        try store.write { tx in try tx.execute(sql: "UPDATE person SET age = 1000 WHERE id = 1") }
        store.waitForObservers()
        let update = recorder.take()
        #expect(update.compactMap(Changes.init) == [Changes(deletions: [0], insertions: [9_999], moves: [[0, 9_999]])])
    }

    @Test func commitsArriveInOrderOneEventEach() throws {
        let (store, recorder) = try Self.fixture()
        for index in 0..<20 {
            try store.write { tx in try tx.execute(sql: "UPDATE person SET age = ? WHERE id = 1", arguments: [.integer(Int64(100 + index))]) }
        }
        store.waitForObservers()
        let events = recorder.take()
        // Back-to-back commits, no waiting in between: still one changeset each, in order.
        #expect(events.count == 20)
        #expect(events.allSatisfy { Changes($0) == Changes(modifications: [0]) })
        #expect(events.compactMap { $0.results?.first?.age } == Array(100..<120))
    }

    @Test func keyPathsLimitModificationsToThoseColumns() throws {
        let (store, _) = try Self.fixture()
        let ages = ChangeRecorder(try store.objects(Person.self).filter("age >= 18").sorted(byKeyPath: "first_name"), keyPaths: ["age"])
        store.waitForObservers()
        _ = ages.take()
        try store.write { tx in try tx.execute(sql: "UPDATE person SET email = 'x@y' WHERE id = 2") }
        store.waitForObservers()
        #expect(ages.take().isEmpty, "email is not observed")
        try store.write { tx in try tx.execute(sql: "UPDATE person SET age = 31 WHERE id = 2") }
        store.waitForObservers()
        #expect(ages.take().compactMap(Changes.init) == [Changes(modifications: [1])])
    }

    @Test func writeWithoutNotifyingSkipsThatToken() throws {
        let (store, recorder) = try Self.fixture()
        let other = ChangeRecorder(try store.objects(Person.self).filter("age >= 18").sorted(byKeyPath: "first_name"))
        store.waitForObservers()
        _ = other.take()
        let token = try #require(recorder.token)
        try store.write(withoutNotifying: [token]) { tx in try tx.insert(Person(id: 6, firstName: "C", lastName: "X", age: 25)) }
        store.waitForObservers()
        #expect(recorder.take().isEmpty, "the silenced token hears nothing")
        #expect(other.take().compactMap(Changes.init) == [Changes(insertions: [1])])
        // The silenced observer's state followed the commit: the next change is relative to it.
        let (changes, names) = try Self.changes(store, recorder) { tx in try tx.delete(Person.self, id: 6) }
        #expect(changes == [Changes(deletions: [1])])
        #expect(names == ["B", "D", "F", "H"])
    }

    /// Nested in a `write`, the tokens are not notified of the enclosing
    /// transaction (its one commit), unless the nested body threw.
    @Test func writeWithoutNotifyingNestedInAWriteSkipsThatToken() throws {
        let (store, recorder) = try Self.fixture()
        let other = ChangeRecorder(try store.objects(Person.self).filter("age >= 18").sorted(byKeyPath: "first_name"))
        store.waitForObservers()
        _ = other.take()
        let token = try #require(recorder.token)
        try store.write { _ in
            try store.write(withoutNotifying: [token]) { tx in try tx.insert(Person(id: 6, firstName: "C", lastName: "X", age: 25)) }
        }
        store.waitForObservers()
        #expect(recorder.take().isEmpty, "the silenced token hears nothing")
        #expect(other.take().compactMap(Changes.init) == [Changes(insertions: [1])])
        // A nested body that threw silences nothing: the enclosing commit is heard.
        struct Refused: Error {}
        try store.write { tx in
            _ = try? store.write(withoutNotifying: [token]) { inner -> Void in
                try inner.insert(Person(id: 7, firstName: "E", lastName: "X", age: 30))
                throw Refused()
            }
            try tx.delete(Person.self, id: 6)
        }
        store.waitForObservers()
        #expect(recorder.take().compactMap(Changes.init) == [Changes(deletions: [1])])
    }

    @Test func limitedQueryIsReRunAndDiffed() throws {
        let (store, _) = try Self.fixture()
        let top = ChangeRecorder(store.objects(Person.self).sorted(byKeyPath: "age", ascending: false).limit(2))
        store.waitForObservers()
        #expect(top.take().first?.results.map { $0.map(\.firstName) } == ["H", "F"])
        try store.write { tx in try tx.execute(sql: "UPDATE person SET age = 45 WHERE id = 1") }
        store.waitForObservers()
        let events = top.take()
        #expect(events.compactMap(Changes.init) == [Changes(deletions: [1], insertions: [1])])
        #expect(events.last?.results.map { $0.map(\.firstName) } == ["H", "B"])
    }

    @Test func droppedTableReportsAnError() throws {
        let (store, recorder) = try Self.fixture()
        try store.write { tx in
            try tx.execute(script: "PRAGMA foreign_keys = OFF")
            try tx.execute(script: "DROP TABLE package_content; DROP TABLE package; DROP TABLE app_state; DROP TABLE person")
        }
        store.waitForObservers()
        let events = recorder.take()
        guard case .error(let error)? = events.last else { Issue.record("expected .error, got \(events)"); return }
        #expect(error.message.contains("person"))
    }

    /// A query string that does not parse throws where it is given
    /// (`QueryTypoTests`); results whose table is missing report it when
    /// fetched and observed.
    @Test func badQueryStringThrowsAtFilterAndAMissingTableWhenObserved() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let error = try #require(throws: StoreError.self) { try store.objects(Person.self).filter("age >>> 3") }
        #expect(error.code == .invalidQuery)
        let missing = store.rows(in: "no_such_table")
        #expect(throws: StoreError.self) { try missing.fetch() }
        let recorder = ChangeRecorder(missing)
        store.waitForObservers()
        guard case .error(let observed)? = recorder.take().first else { Issue.record("expected .error"); return }
        #expect(observed.code == .unknownTable)
    }

    @Test func invalidatedTokenStopsDelivery() throws {
        let (store, recorder) = try Self.fixture()
        recorder.token?.invalidate()
        try store.write { tx in try tx.insert(Person(id: 6, firstName: "C", lastName: "X", age: 25)) }
        store.waitForObservers()
        #expect(recorder.take().isEmpty)
    }

    @Test func dynamicRowsCanBeObserved() throws {
        let (store, _) = try Self.fixture()
        let rows = ChangeRecorder(try store.rows(in: "person").filter("age < $0", 25).sorted(by: [Ordering("age")]))
        store.waitForObservers()
        #expect(rows.take().first?.results.map { $0.map { $0["first_name"] } } == [.text("Kid"), .text("B")])
        try store.write { tx in try tx.execute(sql: "UPDATE person SET age = 15 WHERE id = 1") }
        store.waitForObservers()
        let events = rows.take()
        #expect(events.compactMap(Changes.init) == [Changes(modifications: [1])])
        #expect(events.last?.results?.last?.columns.first == "id", "the internal rowid column is not shown")
    }
}

@Suite(.timeLimit(.minutes(10))) struct ChangeTrackingHooksTests {
    @Test func dropTableStillDrops() throws {
        let store = try TemporaryDatabase().store()
        try store.write { tx in try tx.execute(script: "CREATE TABLE a (id INTEGER PRIMARY KEY); CREATE VIEW v AS SELECT * FROM a") }
        try store.write { tx in try tx.execute(script: "DROP VIEW v; DROP TABLE a") }
        #expect(try store.read { db in try db.tableNames() }.isEmpty)
    }

    @Test func deleteWithoutWhereReportsEveryRow() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try store.write { tx in for index in 0..<50 { try tx.insert(Person(firstName: "P\(index)", lastName: "X")) } }
        let recorder = ChangeRecorder(store.objects(Person.self))
        store.waitForObservers()
        _ = recorder.take()
        try store.write { tx in try tx.execute(sql: "DELETE FROM person") }
        store.waitForObservers()
        #expect(recorder.take().compactMap(Changes.init) == [Changes(deletions: Array(0..<50))])
    }
}
