import Foundation
import SluiceTestSupport
import Sluice
import Testing
import SluiceDemo

/// The README's tour, compiled and run, so it stays true.
@Suite(.timeLimit(.minutes(10))) struct ReadmeTests {
    struct Note: Model {
        static let tableName = "note"
        var id: Int64?
        var title: String
        var createdAt: Date
        mutating func didInsert(rowID: Int64) { id = rowID }
    }

    @Test func tourRunsAsWritten() throws {
        let store = try Store(path: TemporaryDatabase().path, migrations: DemoSchema.migrations)
        let zoe = try store.write { tx in
            try tx.insert(Person(firstName: "Zoë", lastName: "Ødegaard", age: 31, city: "Oslo"))
        }
        #expect(zoe.id == 1)
        let thirties = try store.read { db in
            try db.fetchAll(Person.self,
                            filter: Filter("age BETWEEN $0 AND $1 AND city ==[c] $2", 30, 39, "oslo"),
                            orderBy: [Ordering("last_name"), Ordering("first_name")])
        }
        let same = Column("age").between(30, 39) && Column("city").like("oslo", caseInsensitive: true)
        #expect(try store.read { db in try db.fetchAll(Person.self, filter: same) } == thirties)
        #expect(thirties == [zoe])
        try store.write { tx in
            var updated = zoe
            updated.email = "zoe@example.com"
            try tx.update(updated)
            try tx.upsert(Person(id: 7, firstName: "Ana", lastName: "Silva"))
            try tx.update(Person.self, id: 7) { $0.city = "Bergen" }
            try tx.deleteAll(Person.self, filter: Filter("age < 18"))
        }
        #expect(try store.read { db in try db.fetchAll(Person.self).map(\.firstName) } == ["Zoë", "Ana"])
        #expect(try store.read { db in try db.fetchOne(Person.self, id: 7)?.city } == "Bergen")

        try store.migrate(DemoSchema.migrations + [Migration(version: 6, name: "create_note", sql: "CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT NOT NULL, created_at TEXT NOT NULL)")])
        let note = try store.write { tx in try tx.insert(Note(title: "Hello", createdAt: Date(timeIntervalSince1970: 0))) }
        #expect(try store.read { db in try db.fetchRows(sql: "SELECT created_at FROM note") }.first?[0] == .text("1970-01-01 00:00:00.000"))
        #expect(note.id == 1)
    }
}
