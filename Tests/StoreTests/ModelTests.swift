import Foundation
import SluiceNaming
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

@Suite(.timeLimit(.minutes(10))) struct ModelTests {
    @Test func insertAssignsIDsAndFetchOneFindsThem() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let (a, b) = try store.write { tx in
            (try tx.insert(Person(firstName: "A", lastName: "One")), try tx.insert(Person(firstName: "B", lastName: "Two")))
        }
        #expect(a.id == 1 && b.id == 2)
        #expect(try store.read { db in try db.fetchOne(Person.self, id: 2) } == b)
        #expect(try store.read { db in try db.fetchOne(Person.self, id: 99) } == nil)
    }

    @Test func updateChangesTheRowAndRefusesMissingOnes() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        var person = try store.write { tx in try tx.insert(Person(firstName: "A", lastName: "One")) }
        person.email = "a@example.com"
        person.age = 33
        try store.write { tx in try tx.update(person) }
        #expect(try store.read { db in try db.fetchOne(Person.self, id: person.id) } == person)

        let ghost = Person(id: 42, firstName: "No", lastName: "Body")
        let error = try #require(throws: StoreError.self) { try store.write { tx in try tx.update(ghost) } }
        #expect(error.code == .notFound)
        #expect(error.message == "no row in table person has id 42")
        #expect(throws: StoreError.self) { try store.write { tx in try tx.update(Person(firstName: "No", lastName: "ID")) } }
    }

    /// `update(_:id:_:)` writes only the columns the closure changed (an
    /// `UPDATE OF column` trigger fires only for those), nothing when none did.
    @Test func typedUpdateWritesOnlyChangedColumns() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try store.write { tx in
            try tx.execute(script: """
                CREATE TABLE touched (column_name TEXT);
                CREATE TRIGGER email_set AFTER UPDATE OF email ON person BEGIN INSERT INTO touched VALUES ('email'); END;
                CREATE TRIGGER city_set AFTER UPDATE OF city ON person BEGIN INSERT INTO touched VALUES ('city'); END;
                CREATE TRIGGER any_update AFTER UPDATE ON person BEGIN INSERT INTO touched VALUES ('row'); END;
                """)
        }
        let id = try store.write { tx in try tx.insert(Person(firstName: "A", lastName: "One", city: "Oslo")).id ?? 0 }
        let updated = try store.write { tx in try tx.update(Person.self, id: id) { $0.email = "a@example.com" } }
        #expect(updated.email == "a@example.com" && updated.city == "Oslo")
        #expect(try store.read { db in try db.fetchOne(Person.self, id: id) } == updated)
        try store.write { tx in try tx.update(Person.self, id: id) { $0.email = "a@example.com" } }   // no change
        try store.write { tx in try tx.update(Person.self, id: id) { $0.city = nil } }
        let touched = try store.read { db in try db.fetchRows(sql: "SELECT column_name FROM touched ORDER BY rowid").map { $0.values } }
        #expect(touched == [[.text("row")], [.text("email")], [.text("row")], [.text("city")]], "SQLite fires the newest trigger first")

        let missing = try #require(throws: StoreError.self) { try store.write { tx in try tx.update(Person.self, id: 99) { $0.age = 1 } } }
        #expect(missing.code == .notFound && missing.message == "no row in table person has id 99")
        let rekey = try #require(throws: StoreError.self) { try store.write { tx in try tx.update(Person.self, id: id) { $0.id = 5 } } }
        #expect(rekey.code == .invalidUse)
        var expected = updated
        expected.city = nil
        #expect(try store.read { db in try db.fetchOne(Person.self, id: id) } == expected, "a refused update changes nothing")
    }

    @Test func upsertInsertsThenUpdates() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        var person = try store.write { tx in try tx.upsert(Person(firstName: "A", lastName: "One")) }
        #expect(person.id == 1)
        person.lastName = "Changed"
        try store.write { tx in try tx.upsert(person) }
        try store.write { tx in try tx.upsert(Person(id: 7, firstName: "Seven", lastName: "Given")) }
        #expect(try store.read { db in try db.fetchAll(Person.self) } == [person, Person(id: 7, firstName: "Seven", lastName: "Given")])
    }

    @Test func deleteByModelIDAndFilter() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let people = try store.write { tx in
            try (0..<5).map { try tx.insert(Person(firstName: "P\($0)", lastName: "X", age: $0 * 10)) }
        }
        let results = try store.write { tx in
            [try tx.delete(people[0]) ? 1 : 0, try tx.delete(Person.self, id: 2) ? 1 : 0,
             try tx.delete(Person.self, id: 2) ? 1 : 0, try tx.deleteAll(Person.self, filter: Filter("age >= 40"))]
        }
        #expect(results == [1, 1, 0, 1])
        #expect(try store.read { db in try db.fetchAll(Person.self).compactMap(\.id) } == [3, 4])
        #expect(try store.write { tx in try tx.deleteAll(Person.self) } == 2)
    }

    @Test func foreignKeysAreEnforcedAndCascade() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let error = try #require(throws: StoreError.self) { try store.write { tx in try tx.insert(Package(recipientID: 12)) } }
        #expect(error.code == .constraint)
        #expect(error.message == "FOREIGN KEY constraint failed")
        try store.write { tx in
            let person = try tx.insert(Person(firstName: "R", lastName: "X"))
            let package = try tx.insert(Package(recipientID: try #require(person.id)))
            try tx.insert(PackageContent(packageID: try #require(package.id), title: "Tea", weight: 250, position: 0))
            try tx.delete(person)
        }
        #expect(try store.read { db in try db.fetchCount(PackageContent.self) } == 0, "deleting the recipient cascades to packages and contents")
    }

    @Test func dynamicRowInsertChecksColumnsAndTypes() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let id = try store.write { tx in try tx.insert(Row(["first_name": "A", "last_name": "B", "age": 3]), into: "person") }
        #expect(id == 1)
        let unknown = try #require(throws: StoreError.self) {
            try store.write { tx in try tx.insert(Row(["first_name": "A", "last_name": "B", "nickname": "x"]), into: "person") }
        }
        #expect(unknown.message == "unknown column 'nickname' in table person (columns: id, first_name, last_name, age, email, street, city, postal_code, country)")
        let mismatch = try #require(throws: StoreError.self) {
            try store.write { tx in try tx.insert(Row(["first_name": "A", "last_name": "B", "age": "old"]), into: "person") }
        }
        #expect(mismatch.code == .typeMismatch)
        #expect(mismatch.message == "column 'age' expects an integer, got text \"old\"")
        let real = try #require(throws: StoreError.self) {
            try store.write { tx in try tx.insert(Row(["first_name": "A", "last_name": "B", "age": 2.5]), into: "person") }
        }
        #expect(real.message == "column 'age' expects an integer, got real 2.5")
        #expect(throws: StoreError.self) { try store.write { tx in try tx.insert(Row(["first_name": 5, "last_name": "B"]), into: "person") } }
    }

    @Test func demoDataIsVariedAndConsistent() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        var generator = DemoData(seed: 7)
        let counts = try generator.insert(DemoData.Size(people: 500), into: store)
        #expect(counts.people == 500)
        #expect(counts.packages == 250)
        #expect(counts.contents >= 250 && counts.contents <= 1000)
        #expect(counts.messages >= 50)
        try store.read { db in
            #expect(try db.fetchCount(Person.self) == 500)
            #expect(try db.foreignKeyViolations().isEmpty)
            let names = try db.fetchAll(Person.self).map(\.fullName)
            #expect(names.contains { !$0.allSatisfy(\.isASCII) }, "some names are not ASCII")
            #expect(try db.fetchCount(Person.self, filter: Filter("age IS NULL")) > 0, "some ages are unknown")
            let weights = try db.fetchAll(PackageContent.self).map(\.weight)
            #expect(weights.allSatisfy { (50...3000).contains($0) })
            let emails = try db.fetchAll(Person.self).compactMap(\.email)
            #expect(emails.allSatisfy { $0.allSatisfy(\.isASCII) && $0.contains("@") })
        }
        // The same seed gives the same data.
        let again = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        var twin = DemoData(seed: 7)
        try twin.insert(DemoData.Size(people: 500), into: again)
        let appRows = { (lines: [String]) in lines.filter { !$0.hasPrefix("sluice_") } }
        #expect(try appRows(dump(again)) == appRows(dump(store)))
    }

    enum Priority: Int, Codable, SQLiteValueConvertible { case low, normal, high }
    enum Status: String, Codable, SQLiteValueConvertible { case open, done }

    struct Ticket: Model {
        static let tableName = "ticket"
        var id: Int64?
        var token: UUID
        var priority: Priority
        var status: Status
        var due: Date?
        mutating func didInsert(rowID: Int64) { id = rowID }
    }

    /// Enums with raw values, UUIDs, dates and optionals bind in filters
    /// exactly as `Codable` stores them.
    @Test func enumsUUIDsDatesAndOptionalsBindInFilters() throws {
        let store = try TemporaryDatabase().store()
        try store.write { tx in try tx.execute(sql: "CREATE TABLE ticket (id INTEGER PRIMARY KEY, token TEXT, priority INTEGER, status TEXT, due TEXT)") }
        let day = Date(timeIntervalSince1970: 1_800_000_000)
        let tokens = [UUID(), UUID(), UUID()]
        try store.write { tx in
            try tx.insert(Ticket(token: tokens[0], priority: .high, status: .open, due: day))
            try tx.insert(Ticket(token: tokens[1], priority: .low, status: .done, due: nil))
            try tx.insert(Ticket(token: tokens[2], priority: .high, status: .done, due: day.addingTimeInterval(86_400)))
        }
        let tickets = store.objects(Ticket.self).sorted(byKeyPath: "id")
        #expect(try tickets.filter("priority == $0", Priority.high).fetch().map(\.id) == [1, 3])
        #expect(try tickets.filter("status == $0 AND priority < $1", Status.done, Priority.high).fetch().map(\.id) == [2])
        #expect(try tickets.filter("token == $0", tokens[1]).fetch().map(\.token) == [tokens[1]])
        #expect(try tickets.filter("due > $0", day).fetch().map(\.id) == [3])
        #expect(try tickets.filter("due == $0", Date?.none).fetch().map(\.id) == [2])
        #expect(Priority(sqliteValue: .integer(2)) == .high && Priority(sqliteValue: .integer(7)) == nil)
        #expect(UUID(sqliteValue: .text(tokens[0].uuidString.lowercased())) == tokens[0])
        #expect(UUID(sqliteValue: .blob(withUnsafeBytes(of: tokens[2].uuid) { Data($0) })) == tokens[2])
    }

    /// A model with no CodingKeys over a snake_case schema.
    struct Task: Model {
        static let tableName = "task"
        var id: Int64?
        var projectID: Int64
        var dueDate: Date?
        var isDone: Bool
        var userURLString: String?
        mutating func didInsert(rowID: Int64) { id = rowID }
    }

    /// Swift property names work wherever column names do: writing and
    /// reading a Codable model without CodingKeys, query strings, sort keys,
    /// keyPaths. Column names keep working.
    @Test func swiftNamesFindSnakeCaseColumns() throws {
        #expect(ColumnNaming.snakeCase("projectID") == "project_id")
        #expect(ColumnNaming.snakeCase("userURLString") == "user_url_string")
        #expect(ColumnNaming.snakeCase("firstName") == "first_name")
        #expect(ColumnNaming.snakeCase("id") == "id" && ColumnNaming.snakeCase("sha256Sum") == "sha256_sum")
        let store = try TemporaryDatabase().store()
        try store.write { tx in
            try tx.execute(sql: "CREATE TABLE task (id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL, due_date TEXT, is_done INTEGER NOT NULL, user_url_string TEXT)")
            try tx.insert(Task(projectID: 2, dueDate: nil, isDone: false, userURLString: "https://a"))
            try tx.insert(Task(projectID: 1, dueDate: Date(timeIntervalSince1970: 0), isDone: true, userURLString: nil))
            try tx.insert(Task(projectID: 1, dueDate: nil, isDone: false, userURLString: nil))
        }
        #expect(try store.read { db in try db.fetchRows(sql: "SELECT project_id, is_done FROM task ORDER BY id") }.map(\.values)
                == [[.integer(2), .integer(0)], [.integer(1), .integer(1)], [.integer(1), .integer(0)]])
        let tasks = store.objects(Task.self)
        #expect(try tasks.filter("projectID == 1").sorted(byKeyPath: "isDone").fetch().map(\.id) == [3, 2])
        #expect(try tasks.filter("project_id == 1 AND isDone == false").fetch().map(\.id) == [3])
        // Project 1 (tasks 2 and 3, both without a URL: ties broken by id), then project 2.
        #expect(try tasks.sorted(by: [Ordering("projectID"), Ordering("userURLString", descending: true)]).fetch().map(\.id) == [2, 3, 1])
        #expect(try tasks.fetch().first?.userURLString == "https://a")
        // keyPaths: only isDone counts as a modification.
        let events = Mutex<[Changeset]>([])
        let started = Mutex(false)
        let token = tasks.sorted(byKeyPath: "id").observe(keyPaths: ["isDone"], on: DispatchQueue(label: "names")) { change in
            started.withLock { $0 = true }
            if let changeset = change.changeset { events.withLock { $0.append(changeset) } }
        }
        // The initial result first (polled: ThreadSanitizer is slow).
        let deadline = Date().addingTimeInterval(30)
        while !started.withLock({ $0 }), Date() < deadline { usleep(1_000) }
        try store.write { tx in try tx.execute(sql: "UPDATE task SET user_url_string = 'x' WHERE id = 1") }
        try store.write { tx in try tx.update(Task.self, id: 3) { $0.isDone = true } }
        store.waitForObservers()
        let delivered = Date().addingTimeInterval(30)    // its queue may still be delivering (ThreadSanitizer is slow)
        while events.withLock({ $0.isEmpty }), Date() < delivered { usleep(1_000) }
        usleep(20_000)
        #expect(events.withLock { $0 } == [Changeset(modifications: [2])], "the URL change is not a modification; isDone's is")
        let unknown = try #require(throws: StoreError.self) { try tasks.filter("projectId2 == 1").fetch() }
        #expect(unknown.code == .unknownColumn)
        _ = token
    }
}
