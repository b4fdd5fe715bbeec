import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

/// Snapshots read their elements on access: whatever is committed later,
/// and however long they are held, they show their own commit's rows.
@Suite(.timeLimit(.minutes(10))) struct LazySnapshotTests {
    /// Every row as "first_name/age", in the observed order, read on a plain connection.
    static func expected(_ plain: PlainConnection) throws -> [String] {
        try plain.rows("SELECT first_name, age FROM person ORDER BY first_name, id").map { row in
            "\(String(sqliteValue: row[0]) ?? "?")/\(Int(sqliteValue: row[1]).map(String.init) ?? "nil")"
        }
    }

    static func shown(_ snapshot: ResultsSnapshot<Person>) -> [String] {
        snapshot.map { "\($0.firstName)/\($0.age.map(String.init) ?? "nil")" }
    }

    /// Snapshots kept through updates, deletes and inserts (ours and another
    /// connection's), commits that change thousands of rows (the held states
    /// keep their own read transaction then) and a schema change.
    @Test func heldSnapshotsKeepTheirCommitsRows() throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: DemoSchema.migrations)
        try store.write { tx in
            for index in 0..<5_000 { try tx.insert(Person(firstName: "p\(index)", lastName: "X", age: index % 90)) }
        }
        let recorder = ChangeRecorder(store.objects(Person.self).sorted(byKeyPath: "first_name"))
        store.waitForObservers()
        let plain = PlainConnection(path: database.path)
        // Each expected state as a hash and its middle row (the suite runs
        // beside tests that measure the process's memory: keep it small).
        var held: [(snapshot: ResultsSnapshot<Person>, rows: Int, hash: Int, middle: String)] = []
        func keepLatest() throws {
            guard let latest = recorder.take().last?.results else { return }
            let rows = try Self.expected(plain)
            held.append((latest, rows.count, rows.hashValue, rows[rows.count / 2]))
        }
        try keepLatest()
        var random = SplitMix(seed: 11)
        for round in 0..<40 {
            let id = Int64(1 + random.next(5_000))
            switch round % 10 {
            case 9:
                try store.write { tx in try tx.execute(sql: "UPDATE person SET age = coalesce(age, 0) + 1") }   // every row
            case 5 where round == 15:
                try store.write { tx in try tx.execute(sql: "ALTER TABLE person ADD COLUMN nickname TEXT") }
            case 4, 8:
                try plain.execute("UPDATE person SET first_name = 'q\(round)', age = \(round) WHERE id = \(id)")
            case 0, 3:
                try store.write { tx in try tx.execute(sql: "DELETE FROM person WHERE id = ?", arguments: [.integer(id)]) }
            case 1, 6:
                try store.write { tx in try tx.insert(Person(firstName: "n\(round)", lastName: "Y", age: round)) }
            default:
                try store.write { tx in
                    try tx.execute(sql: "UPDATE person SET age = ? WHERE id = ?", arguments: [.integer(Int64(100 + round)), .integer(id)])
                }
            }
            store.waitForObservers()
            try keepLatest()
        }
        #expect(held.count > 30)
        for (offset, entry) in held.enumerated() {
            let shown = Self.shown(entry.snapshot)
            #expect(shown.count == entry.rows && shown.hashValue == entry.hash, "snapshot \(offset)")
            #expect(Self.shown(ResultsSnapshot(elements: [entry.snapshot[entry.rows / 2]])) == [entry.middle], "snapshot \(offset)")
        }
    }

    @Test func aSnapshotOutlivesItsObservation() throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: DemoSchema.migrations)
        try store.write { tx in
            for index in 0..<20 { try tx.insert(Person(firstName: "p\(index)", lastName: "X", age: index)) }
        }
        let recorder = ChangeRecorder(store.objects(Person.self).sorted(byKeyPath: "first_name"))
        store.waitForObservers()
        let plain = PlainConnection(path: database.path)
        let expected = try Self.expected(plain)
        let snapshot = try #require(recorder.take().last?.results)
        recorder.token?.invalidate()
        try store.write { tx in try tx.execute(sql: "UPDATE person SET age = age + 100") }
        try store.write { tx in try tx.execute(sql: "DELETE FROM person WHERE id % 2 = 0") }
        try plain.execute("UPDATE person SET first_name = 'z' || first_name")
        #expect(Self.shown(snapshot) == expected)
        #expect(try snapshot.elements(in: 3..<6).map(\.firstName) == Array(expected[3..<6]).map { String($0.prefix { $0 != "/" }) })
        #expect(throws: StoreError.self) { try snapshot.element(at: 20) }
    }

    @Test func theCacheOfDecodedElementsIsBounded() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try store.write { tx in
            for index in 0..<3_000 { try tx.insert(Person(firstName: "p\(index)", lastName: "X")) }
        }
        let recorder = ChangeRecorder(store.objects(Person.self))
        store.waitForObservers()
        let snapshot = try #require(recorder.take().last?.results)
        #expect((reflected(snapshot.rows, "pin") as ReadPin?) != nil, "elements are read through a pin, not held")
        #expect(snapshot.map(\.firstName).count == 3_000)
        for position in stride(from: 0, to: 3_000, by: 7) { _ = snapshot[position] }
        let cached: [Int64: Person]? = reflected(snapshot.rows, "cache")
        #expect(try #require(cached).count <= ResultsSnapshot<Person>.cacheLimit)
    }

    /// A reader holding WAL frames keeps writers from restarting the WAL:
    /// with a snapshot always held, the observation center renews its read
    /// transaction so that the WAL does not grow with every commit.
    @Test func theWALStaysBoundedWhileASnapshotIsHeld() throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: DemoSchema.migrations)
        try store.write { tx in
            for index in 0..<200 { try tx.insert(Person(firstName: "p\(index)", lastName: "X", age: 0)) }
        }
        let recorder = ChangeRecorder(store.objects(Person.self).sorted(byKeyPath: "first_name"))
        store.waitForObservers()
        let first = try #require(recorder.take().last?.results)
        let firstRows = Self.shown(first)
        var latest = first
        for round in 0..<2_500 {
            try store.write { tx in
                try tx.execute(sql: "UPDATE person SET age = ? WHERE id = ?", arguments: [.integer(Int64(round)), .integer(Int64(1 + round % 200))])
            }
            store.waitForObservers()
            if let results = recorder.take().last?.results { latest = results }
        }
        let wal = try FileManager.default.attributesOfItem(atPath: database.path + "-wal")[.size] as? Int ?? 0
        // Each commit appends a few pages: 2,500 of them would be 20–40 MB.
        #expect(wal < 8_000_000, "WAL is \(wal) bytes")
        #expect(Self.shown(first) == firstRows)
        #expect(Self.shown(latest) == (try Self.expected(PlainConnection(path: database.path))))
    }
}
