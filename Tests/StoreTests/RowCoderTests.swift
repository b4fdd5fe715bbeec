import Foundation
import SluiceTestSupport
import Testing
import SluiceDemo
@testable import Sluice

@Suite(.timeLimit(.minutes(10))) struct RowCoderTests {
    static let cases: [(String, Sample)] = {
        var cases: [(String, Sample)] = []
        cases.append(("all NULL optionals", Sample.make()))
        var full = Sample.make(name: "Zoë Ødegaard 李 🚀")
        full.nickname = "Zo"
        full.count = 42
        full.small = -7
        full.score = 3.25
        full.ratio = 0.1
        full.flag = true
        full.payload = Data([0, 1, 2, 255])
        full.created = Date(timeIntervalSince1970: 1_767_225_600.125)
        full.mood = .ünïcödé
        full.level = .high
        full.tags = Sample.Tags(names: ["a", "ü", "\"quoted\""], weight: 1.5)
        full.unsigned = UInt32.max
        cases.append(("every column set", full))
        var empty = Sample.make(name: "")
        empty.nickname = ""
        empty.payload = Data()
        cases.append(("empty strings and blob", empty))
        var extremes = Sample.make(name: "extremes")
        extremes.count = Int64.max
        extremes.small = Int32.min
        extremes.score = -Double.greatestFiniteMagnitude
        extremes.ratio = Double.leastNonzeroMagnitude
        cases.append(("Int64.max, Int32.min, double extremes", extremes))
        var minimum = Sample.make(name: "minimum")
        minimum.count = Int64.min
        minimum.score = -0.0
        minimum.ratio = .infinity
        cases.append(("Int64.min, -0.0, infinity", minimum))
        var decomposed = Sample.make(name: "e\u{301}")        // e + combining acute
        decomposed.nickname = "\u{e9}"                        // precomposed é
        cases.append(("decomposed and precomposed forms", decomposed))
        var control = Sample.make(name: "tab\tnew\nline\0nul")
        control.nickname = "'; DROP TABLE sample; --"
        cases.append(("control characters and SQL in values", control))
        var large = Sample.make(name: String(repeating: "ß", count: 100_000))
        large.payload = Data((0..<5_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        cases.append(("large text and a 5 MB blob", large))
        return cases
    }()

    @Test(arguments: cases)
    func modelRoundTripsThroughTheTable(_ name: String, _ sample: Sample) throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: [Sample.schema])
        let inserted = try store.write { tx in try tx.insert(sample) }
        let id = try #require(inserted.id)
        let fetched = try #require(try store.read { db in try db.fetchOne(Sample.self, id: id) })
        #expect(fetched == inserted)
        // Swift's String equality is canonical equivalence: check the scalars too.
        #expect(Array(fetched.name.unicodeScalars) == Array(sample.name.unicodeScalars))
        #expect(fetched.nickname.map { Array($0.unicodeScalars) } == sample.nickname.map { Array($0.unicodeScalars) })
        // SQLite stores an integral REAL compactly, as an integer, so -0.0
        // reads back as 0.0 (they compare equal, which `==` above checked).
    }

    @Test func storedColumnsHoldSQLiteTypesNotJSON() throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: [Sample.schema])
        var sample = Sample.make(name: "types")
        sample.ratio = 2.5
        sample.payload = Data([1, 2])
        sample.mood = .grumpy
        sample.level = .high
        sample.created = Date(timeIntervalSince1970: 86_400 + 0.25)
        let id = try #require(try store.write { tx in try tx.insert(sample) }.id)
        let row = try #require(try store.read { db in try db.fetchRows(sql: "SELECT * FROM sample WHERE id = ?", arguments: [.integer(id)]) }.first)
        #expect(row["name"] == .text("types"))
        #expect(row["nickname"] == .null)
        #expect(row["count"] == .integer(0))
        #expect(row["ratio"] == .real(2.5))
        #expect(row["flag"] == .integer(0))
        #expect(row["payload"] == .blob(Data([1, 2])))
        #expect(row["created"] == .text("1970-01-02 00:00:00.250"))
        #expect(row["mood"] == .text("grumpy"), "RawRepresentable enums store their raw value")
        #expect(row["level"] == .integer(99))
        #expect(row["tags"] == .text(#"{"names":[],"weight":0}"#), "other Codable values are JSON text, keys sorted")
    }

    @Test func wrongStoredTypeIsADecodingErrorNamingTheColumn() throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: [Sample.schema])
        let id = try #require(try store.write { tx in try tx.insert(Sample.make()) }.id)
        try store.write { tx in try tx.execute(sql: "UPDATE sample SET count = 'many' WHERE id = ?", arguments: [.integer(id)]) }
        let error = try #require(throws: StoreError.self) { try store.read { db in try db.fetchAll(Sample.self) } }
        #expect(error.code == .decoding)
        #expect(error.message.contains("column 'count' holds text, which is not a Int64"))
    }

    @Test func nullInANonOptionalPropertyIsADecodingError() throws {
        let database = TemporaryDatabase()
        let store = try database.store()
        try store.write { tx in
            try tx.execute(script: "CREATE TABLE sample (id INTEGER PRIMARY KEY, name TEXT, nickname TEXT, count INTEGER, small INTEGER, score REAL, ratio REAL, flag INTEGER, payload BLOB, created TEXT, mood TEXT, level INTEGER, tags TEXT, unsigned INTEGER)")
            try tx.execute(sql: "INSERT INTO sample (name) VALUES (NULL)")
        }
        let error = try #require(throws: StoreError.self) { try store.read { db in try db.fetchAll(Sample.self) } }
        #expect(error.code == .decoding)
        #expect(error.message.contains("column 'name' is NULL but String is not optional"))
    }

    @Test func propertyWithoutAColumnIsRefusedBeforeWriting() throws {
        struct Stray: Model {
            static let tableName = "sample"
            var id: Int64?
            var name: String
            var colour: String
        }
        let database = TemporaryDatabase()
        let store = try database.store(migrations: [Sample.schema])
        let error = try #require(throws: StoreError.self) { try store.write { tx in try tx.insert(Stray(id: nil, name: "x", colour: "red")) } }
        #expect(error.code == .unknownColumn)
        #expect(error.message.hasPrefix("Stray has a property 'colour', which is not a column of table sample"))
    }

    @Test func dynamicRowsKeepStorageClasses() throws {
        let database = TemporaryDatabase()
        let store = try database.store()
        let row = try #require(try store.read { db in
            try db.fetchRows(sql: "SELECT NULL AS n, 9223372036854775807 AS i, 1.5 AS r, 'é' AS t, x'00ff' AS b")
        }.first)
        #expect(row.columns == ["n", "i", "r", "t", "b"])
        #expect(row.values == [.null, .integer(Int64.max), .real(1.5), .text("é"), .blob(Data([0, 255]))])
        #expect(try row.value("i", as: Int64.self) == Int64.max)
        #expect(throws: StoreError.self) { try row.value("t", as: Int.self) }
    }

    @Test(arguments: [
        ("2026-11-21 05:47:17.123", 1_795_240_037.123),
        ("1970-01-01 00:00:00.000", 0.0),
        ("1969-12-31 23:59:59.500", -0.5),
        ("2000-02-29 12:00:00.000", 951_825_600.0),
    ])
    func datesUseSortableUTCText(_ text: String, _ seconds: Double) throws {
        let date = Date(timeIntervalSince1970: seconds)
        #expect(date.sqliteValue == .text(text))
        let parsed = try #require(Date(sqliteValue: .text(text)))
        #expect(abs(parsed.timeIntervalSince1970 - seconds) < 0.0005)
    }

    @Test(arguments: ["", "2026-13-01", "2026-01-01 25", "yesterday", "2026-01-01 10:00:00.", "2026-01-01 10:00:00.1234567"])
    func malformedDateTextIsRejectedOrReadExactly(_ text: String) {
        let date = Date(sqliteValue: .text(text))
        if text == "2026-01-01 10:00:00.1234567" {
            #expect(date != nil, "extra fraction digits are accepted and truncated to milliseconds")
        } else {
            #expect(date == nil)
        }
    }
}

@Suite(.timeLimit(.minutes(10))) struct RowReaderTests {
    /// Person's hand-written `init(row:)` must read exactly what Codable reads.
    @Test func personRowInitAgreesWithCodable() throws {
        struct CodablePerson: Model, Equatable {
            static let tableName = "person"
            var id: Int64?
            var first_name: String
            var last_name: String
            var age: Int?
            var email: String?
            var street: String?
            var city: String?
            var postal_code: String?
            var country: String?
        }
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        var generator = DemoData(seed: 3)
        try generator.insert(DemoData.Size(people: 300), into: store)
        let (fast, codable) = try store.read { db in (try db.fetchAll(Person.self), try db.fetchAll(CodablePerson.self)) }
        #expect(fast.count == 300)
        let converted = codable.map { (person: CodablePerson) -> Person in
            Person(id: person.id, firstName: person.first_name, lastName: person.last_name, age: person.age, email: person.email,
                   street: person.street, city: person.city, postalCode: person.postal_code, country: person.country)
        }
        #expect(fast == converted)
    }

    @Test func rowReaderReportsMissingColumnsAndWrongTypes() throws {
        struct Partial: Model {
            static let tableName = "person"
            var id: Int64?
            var nickname: String
            init(row: RowReader) throws {
                id = try row["id"]
                nickname = try row["nickname"]
            }
        }
        struct Mistyped: Model {
            static let tableName = "person"
            var id: Int64?
            var age: Int
            init(row: RowReader) throws {
                id = try row["id"]
                age = try row["age"]
            }
        }
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try store.write { tx in try tx.insert(Person(firstName: "A", lastName: "B")) }
        let missing = try #require(throws: StoreError.self) { try store.read { db in try db.fetchAll(Partial.self) } }
        #expect(missing.code == .decoding)
        #expect(missing.message.contains("no column 'nickname' in the row"))
        let null = try #require(throws: StoreError.self) { try store.read { db in try db.fetchAll(Mistyped.self) } }
        #expect(null.message.contains("column 'age' is NULL but Int is not optional"))
    }
}

@Suite(.timeLimit(.minutes(10))) struct SQLiteValueTests {
    @Test func textEqualityIsByteExactAsInSQLite() {
        #expect(SQLiteValue.text("e\u{301}") != SQLiteValue.text("\u{e9}"))
        #expect(Set([SQLiteValue.text("e\u{301}"), .text("\u{e9}")]).count == 2)
        #expect(SQLiteValue.text("é") == SQLiteValue.text("\u{e9}"))
        #expect(SQLiteValue.integer(1) != SQLiteValue.real(1))
    }
}
