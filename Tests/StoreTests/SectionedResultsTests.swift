import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

/// Records what a sectioned observation delivers.
typealias SectionRecorder<Key: Hashable & Sendable, Element: Sendable> = EventRecorder<SectionedResultsChange<Key, Element>>

extension EventRecorder {
    convenience init<Key, Element>(_ sections: SectionedResults<Key, Element>, keyPaths: [String]? = nil) where Event == SectionedResultsChange<Key, Element> {
        self.init { record in sections.observe(keyPaths: keyPaths) { record($0) } }
    }
}

/// A sectioned change in a comparable form.
struct SectionChanges: Equatable, CustomStringConvertible {
    var deletions: [IndexPath] = []
    var insertions: [IndexPath] = []
    var modifications: [IndexPath] = []
    var sectionsToInsert: [Int] = []
    var sectionsToDelete: [Int] = []

    init(deletions: [IndexPath] = [], insertions: [IndexPath] = [], modifications: [IndexPath] = [],
         sectionsToInsert: [Int] = [], sectionsToDelete: [Int] = []) {
        (self.deletions, self.insertions, self.modifications) = (deletions, insertions, modifications)
        (self.sectionsToInsert, self.sectionsToDelete) = (sectionsToInsert, sectionsToDelete)
    }

    init?<K, E>(_ change: SectionedResultsChange<K, E>) {
        guard case .update(_, let deletions, let insertions, let modifications, let inserted, let deleted) = change else { return nil }
        self.init(deletions: deletions, insertions: insertions, modifications: modifications,
                  sectionsToInsert: Array(inserted), sectionsToDelete: Array(deleted))
    }

    var description: String {
        "del \(deletions) ins \(insertions) mod \(modifications) +sec \(sectionsToInsert) -sec \(sectionsToDelete)"
    }
}

@Suite(.timeLimit(.minutes(10))) struct SectionedResultsTests {
    /// People by city, then first name: Berlin [Ann, Bob], Oslo [Cid, Dan], Rome [Eve].
    static func fixture() throws -> (Store, SectionRecorder<SQLiteValue, Person>) {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try store.write { tx in
            for (id, name, city) in [(1, "Ann", "Berlin"), (2, "Bob", "Berlin"), (3, "Cid", "Oslo"), (4, "Dan", "Oslo"), (5, "Eve", "Rome")]
                as [(Int64, String, String)] {
                try tx.insert(Person(id: id, firstName: name, lastName: "X", age: 30, city: city))
            }
        }
        let recorder = SectionRecorder(store.objects(Person.self).sorted(by: \.firstName).sectioned(by: "city"))
        store.waitForObservers()
        let initial = recorder.take()
        #expect(initial.count == 1)
        #expect(initial.first.flatMap(\.sections).map(Self.layout) == ["Berlin: Ann Bob", "Oslo: Cid Dan", "Rome: Eve"])
        return (store, recorder)
    }

    static func layout(_ sections: SectionedResultsSnapshot<SQLiteValue, Person>) -> [String] {
        sections.map { section in
            let key = String(sqliteValue: section.key) ?? "\(section.key)"
            return "\(key): " + section.map(\.firstName).joined(separator: " ")
        }
    }

    static func changes(_ store: Store, _ recorder: SectionRecorder<SQLiteValue, Person>, _ sql: String) throws -> ([SectionChanges], [String]) {
        try store.write { tx in try tx.execute(script: sql) }
        store.waitForObservers()
        let events = recorder.take()
        return (events.compactMap(SectionChanges.init), events.last?.sections.map(layout) ?? [])
    }

    @Test func aRowMovingBetweenSectionsIsADeletionAndAnInsertion() throws {
        let (store, recorder) = try Self.fixture()
        let (changes, layout) = try Self.changes(store, recorder, "UPDATE person SET city = 'Oslo' WHERE id = 1")
        #expect(changes == [SectionChanges(deletions: [[0, 0]], insertions: [[1, 0]])])
        #expect(layout == ["Berlin: Bob", "Oslo: Ann Cid Dan", "Rome: Eve"])
    }

    @Test func deletingTheLastRowOfASectionDeletesTheSection() throws {
        let (store, recorder) = try Self.fixture()
        let (changes, layout) = try Self.changes(store, recorder, "DELETE FROM person WHERE id = 5")
        #expect(changes == [SectionChanges(sectionsToDelete: [2])])
        #expect(layout == ["Berlin: Ann Bob", "Oslo: Cid Dan"])
    }

    @Test func aNewSectionAppearsInTheMiddle() throws {
        let (store, recorder) = try Self.fixture()
        let (changes, layout) = try Self.changes(store, recorder, "INSERT INTO person (id, first_name, last_name, city) VALUES (6, 'Fay', 'X', 'Madrid')")
        #expect(changes == [SectionChanges(sectionsToInsert: [1])])
        #expect(layout == ["Berlin: Ann Bob", "Madrid: Fay", "Oslo: Cid Dan", "Rome: Eve"])
    }

    @Test func aModificationKeepsItsPlace() throws {
        let (store, recorder) = try Self.fixture()
        let (changes, _) = try Self.changes(store, recorder, "UPDATE person SET age = 31 WHERE id = 4")
        #expect(changes == [SectionChanges(modifications: [[1, 1]])])
    }

    @Test func aRowThatStaysInPlaceButChangesSectionMovesToANewOne() throws {
        // Bob is last of Berlin; in "Bremen" he is still second of all rows, alone in a new section.
        let (store, recorder) = try Self.fixture()
        let (changes, layout) = try Self.changes(store, recorder, "UPDATE person SET city = 'Bremen' WHERE id = 2")
        #expect(changes == [SectionChanges(deletions: [[0, 1]], sectionsToInsert: [1])])
        #expect(layout == ["Berlin: Ann", "Bremen: Bob", "Oslo: Cid Dan", "Rome: Eve"])
    }

    @Test func severalChangesInOneCommit() throws {
        let (store, recorder) = try Self.fixture()
        let (changes, layout) = try Self.changes(store, recorder, """
            DELETE FROM person WHERE id IN (3, 4);
            INSERT INTO person (id, first_name, last_name, city) VALUES (7, 'Al', 'X', 'Rome'), (8, 'Zed', 'X', 'Aachen');
            UPDATE person SET age = 1 WHERE id = 1;
            """)
        #expect(changes == [SectionChanges(insertions: [[2, 0]], modifications: [[0, 0]], sectionsToInsert: [0], sectionsToDelete: [1])])
        #expect(layout == ["Aachen: Zed", "Berlin: Ann Bob", "Rome: Al Eve"])
    }

    @Test func sectionsByAClosureFollowItsKeys() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try store.write { tx in
            for (id, last) in [(1, "adams"), (2, "Baker"), (3, "Bell"), (4, "Clark")] as [(Int64, String)] {
                try tx.insert(Person(id: id, firstName: "F", lastName: last))
            }
        }
        let sections = store.objects(Person.self).sorted(by: \.lastName).sectioned { String($0.lastName.prefix(1)).uppercased() }
        let recorder = SectionRecorder(sections)
        store.waitForObservers()
        func layout(_ change: SectionedResultsChange<String, Person>?) -> [String] {
            change?.sections?.map { "\($0.key): " + $0.map(\.lastName).joined(separator: " ") } ?? []
        }
        #expect(layout(recorder.take().last) == ["A: adams", "B: Baker Bell", "C: Clark"])
        try store.write { tx in try tx.execute(sql: "UPDATE person SET last_name = 'Cole' WHERE id = 1") }
        store.waitForObservers()
        let events = recorder.take()
        #expect(events.compactMap(SectionChanges.init) == [SectionChanges(insertions: [[1, 1]], sectionsToDelete: [0])])
        #expect(layout(events.last) == ["B: Baker Bell", "C: Clark Cole"])
        #expect(try sections.fetch().allKeys == ["B", "C"])
    }

    @Test func keyPathSectionsHaveTheirPropertysValues() throws {
        let (store, _) = try Self.fixture()
        let sections = try store.objects(Person.self).sectioned(by: \.city, ascending: false).fetch()
        #expect(sections.allKeys == ["Rome", "Oslo", "Berlin"])
        #expect(sections[[2, 1] as IndexPath].firstName == "Bob")
    }

    /// Publisher merging: two updates composed into one apply as the two did.
    @Test func mergedChangesApplyAsTheirSequence() throws {
        let (store, recorder) = try Self.fixture()
        var mirror: [(key: SQLiteValue, items: [String])] = []
        let first = try store.objects(Person.self).sorted(by: \.firstName).sectioned(by: "city").fetch()
        SectionedResultsChange<SQLiteValue, Person>.initial(first).apply(to: &mirror) { $0.firstName }
        try store.write { tx in try tx.execute(script: "DELETE FROM person WHERE id = 5; UPDATE person SET city = 'Rome' WHERE id = 2") }
        try store.write { tx in try tx.execute(script: "INSERT INTO person (id, first_name, last_name, city) VALUES (9, 'Ada', 'X', 'Oslo'); DELETE FROM person WHERE id = 1") }
        store.waitForObservers()
        let events = recorder.take()
        #expect(events.count == 2)
        let merged = SectionedResultsChange.merge(events[0], events[1])
        merged?.apply(to: &mirror) { $0.firstName }
        #expect(mirror.map { String(sqliteValue: $0.key) ?? "" } == ["Oslo", "Rome"])
        #expect(mirror.map(\.items) == [["Ada", "Cid", "Dan"], ["Bob"]])
    }
}

/// After every commit, the previous sections with the change applied equal
/// the query run again on a plain connection and grouped by SQLite
/// (`dense_rank()` over the section expression): over random workloads, for
/// commits by this store, another connection and the sqlite3 shell.
@Suite(.timeLimit(.minutes(10)), .serialized) struct SectionedPropertyTests {
    /// Sections rebuilt only from the changes.
    final class SectionMirror<Key: Hashable & Sendable> {
        let name: String
        /// `SELECT id, <section value>, dense_rank() OVER (ORDER BY <section expression>) FROM person ... ORDER BY ...`.
        let sql: String
        let recorder: SectionRecorder<Key, Person>
        var sections: [(key: Key, items: [Int64])] = []

        init(_ name: String, _ sectioned: SectionedResults<Key, Person>, keyPaths: [String]? = nil, sql: String) {
            self.name = name
            self.sql = sql
            recorder = SectionRecorder(sectioned, keyPaths: keyPaths)
        }

        func check(_ plain: PlainConnection, key: (Key) -> SQLiteValue, context: String) throws {
            for change in recorder.take() {
                if case .error(let error) = change { Issue.record("\(name): \(error) (\(context))") }
                change.apply(to: &sections) { $0.id ?? -1 }
            }
            var expected: [(key: SQLiteValue, items: [Int64])] = []
            var rank: SQLiteValue?
            for row in try plain.rows(sql) {
                if row[2] != rank {
                    expected.append((row[1], []))
                    rank = row[2]
                }
                expected[expected.count - 1].items.append(Int64(sqliteValue: row[0]) ?? -1)
            }
            #expect(sections.map { key($0.key) } == expected.map(\.key), "\(name) keys (\(context))")
            #expect(sections.map(\.items) == expected.map(\.items), "\(name) rows (\(context))")
        }
    }

    @Test(arguments: [(ChangesetPropertyTests.Writer.own, 200, UInt64(11)), (.otherConnection, 80, 12), (.sqliteShell, 50, 13), (.trackedShell, 50, 14)])
    func applyingSectionChangesEqualsGroupingTheQueryAgain(writer: ChangesetPropertyTests.Writer, transactions: Int, seed: UInt64) throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: DemoSchema.migrations)
        if writer == .trackedShell { try store.trackForeignWriters(tables: ["person"]) }
        let plain = PlainConnection(path: database.path)
        let people = store.objects(Person.self)
        let byCity = SectionMirror("by city", people.sorted(by: \.firstName).sectioned(by: "city"),
                                   sql: "SELECT id, city, dense_rank() OVER (ORDER BY city) FROM person ORDER BY city, first_name, id")
        let byAge = SectionMirror("by age desc", try people.filter("age >= 20 OR age IS NULL").sorted(by: [Ordering("last_name", descending: true)])
                                    .sectioned(by: "age", ascending: false),
                                  sql: "SELECT id, age, dense_rank() OVER (ORDER BY age DESC) FROM person WHERE age >= 20 OR age IS NULL ORDER BY age DESC, last_name DESC, id")
        let cityAges = SectionMirror("by city, ages only", people.sorted(by: \.lastName).sectioned(by: "city"), keyPaths: ["age"],
                                     sql: "SELECT id, city, dense_rank() OVER (ORDER BY city) FROM person ORDER BY city, last_name, id")
        let byDecade = SectionMirror("by decade (closure)", try people.filter("city IS NOT NULL").sorted(by: \.firstName).sectioned { $0.age.map { $0 / 10 } },
                                     sql: "SELECT id, age / 10, dense_rank() OVER (ORDER BY age / 10) FROM person WHERE city IS NOT NULL ORDER BY age / 10, first_name, id")
        func check(_ context: String) throws {
            store.waitForObservers()
            try byCity.check(plain, key: { $0 }, context: context)
            try byAge.check(plain, key: { $0 }, context: context)
            try cityAges.check(plain, key: { $0 }, context: context)
            try byDecade.check(plain, key: { $0.sqliteValue }, context: context)
        }
        try check("initial")
        var workload = Workload(seed: seed)
        let other = writer == .otherConnection ? try Store(path: database.path) : nil
        for index in 0..<transactions {
            let statements = try writer.commitNext(&workload, store: store, other: other, path: database.path)
            try check("\(writer) transaction \(index): \(statements.map(\.sql))")
        }
        #expect(byCity.sections.count > 3 && byDecade.sections.count > 3, "the workload made several sections")
    }
}
