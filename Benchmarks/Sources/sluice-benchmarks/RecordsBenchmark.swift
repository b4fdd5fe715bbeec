import BenchSQLite
import Foundation
import Sluice
import SluiceDemo

/// Insert 100,000 people in one transaction, then fetch and decode them all:
/// Sluice's typed API against hand-written C API code, same schema and pragmas.
enum RecordsBenchmark {
    /// Person without the macro: written and read through Codable alone.
    struct CodablePerson: Model {
        static let tableName = "person"
        var id: Int64?
        var firstName: String
        var lastName: String
        var age: Int?
        var email: String?
        var street: String?
        var city: String?
        var postalCode: String?
        var country: String?
        enum CodingKeys: String, CodingKey {
            case id, firstName = "first_name", lastName = "last_name", age, email, street, city, postalCode = "postal_code", country
        }

        init(_ person: Person) {
            (id, firstName, lastName, age, email) = (person.id, person.firstName, person.lastName, person.age, person.email)
            (street, city, postalCode, country) = (person.street, person.city, person.postalCode, person.country)
        }
    }

    static let personSchema = DemoSchema.migrations[0].sql

    static func people(_ count: Int) -> [Person] {
        let firsts = ["Zoë", "José", "Anna", "Łukasz", "Søren", "Ngọc", "Émile", "Björk", "Hana", "Oliver"]
        let lasts = ["Müller", "Nguyễn", "Smith", "Öztürk", "García", "Kowalski", "Tanaka", "Ødegaard"]
        return (0..<count).map { i in
            Person(firstName: firsts[i % firsts.count], lastName: lasts[i % lasts.count], age: 18 + i % 70,
                   email: "person\(i)@example.com", street: "\(i % 300) Main Street", city: "Oslo",
                   postalCode: String(1000 + i % 9000), country: "Norway")
        }
    }

    // MARK: - Raw C

    static func openRaw(_ path: String) -> OpaquePointer? {
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK else { return nil }
        sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL; PRAGMA cache_size = -8192", nil, nil, nil)
        // A store on the same file checkpoints now and then: wait for its lock instead of failing with SQLITE_BUSY.
        sqlite3_busy_timeout(db, 5_000)
        return db
    }

    static func bindText(_ statement: OpaquePointer?, _ index: Int32, _ text: String?) {
        guard var text else { sqlite3_bind_null(statement, index); return }
        text.withUTF8 { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                _ = sqlite3_bind_text(statement, index, $0.baseAddress, Int32($0.count), _bench_transient())
            }
        }
    }

    static func rawInsert(_ db: OpaquePointer?, _ people: [Person]) {
        sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil)
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, "INSERT INTO person (id, first_name, last_name, age, email, street, city, postal_code, country) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", -1, &statement, nil)
        for person in people {
            if let id = person.id { sqlite3_bind_int64(statement, 1, id) } else { sqlite3_bind_null(statement, 1) }
            bindText(statement, 2, person.firstName)
            bindText(statement, 3, person.lastName)
            if let age = person.age { sqlite3_bind_int64(statement, 4, Int64(age)) } else { sqlite3_bind_null(statement, 4) }
            bindText(statement, 5, person.email)
            bindText(statement, 6, person.street)
            bindText(statement, 7, person.city)
            bindText(statement, 8, person.postalCode)
            bindText(statement, 9, person.country)
            if sqlite3_step(statement) != SQLITE_DONE { fatalError("raw insert failed") }
            sqlite3_reset(statement)
        }
        sqlite3_finalize(statement)
        sqlite3_exec(db, "COMMIT", nil, nil, nil)
    }

    static func columnText(_ statement: OpaquePointer?, _ index: Int32) -> String? {
        guard let pointer = sqlite3_column_text(statement, index) else { return nil }
        return String(decoding: UnsafeBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(statement, index))), as: UTF8.self)
    }

    static func rawFetch(_ db: OpaquePointer?, sql: String = "SELECT * FROM person ORDER BY id") -> [Person] {
        sqlite3_exec(db, "BEGIN", nil, nil, nil)
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        var people: [Person] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            people.append(Person(
                id: sqlite3_column_int64(statement, 0),
                firstName: columnText(statement, 1) ?? "",
                lastName: columnText(statement, 2) ?? "",
                age: sqlite3_column_type(statement, 3) == SQLITE_NULL ? nil : Int(sqlite3_column_int64(statement, 3)),
                email: columnText(statement, 4),
                street: columnText(statement, 5),
                city: columnText(statement, 6),
                postalCode: columnText(statement, 7),
                country: columnText(statement, 8)))
        }
        sqlite3_finalize(statement)
        sqlite3_exec(db, "COMMIT", nil, nil, nil)
        return people
    }

    // MARK: - Run

    /// Creates the person table in `store`, then times inserting `models` in one transaction.
    static func timedInsert<M: Model>(_ models: [M], into store: Store) throws -> Double {
        try store.write { tx in try tx.execute(script: personSchema) }
        return try Harness.seconds {
            try store.write { tx in
                for model in models { try tx.insert(model) }
            }
        }
    }

    /// The fetch times of one kind of fetch, one sample per round.
    struct FetchTimes {
        var raw: [Double] = [], table: [Double] = [], codable: [Double] = []
    }

    /// One round of the three fetches of the same rows: raw C (through a new
    /// connection, so it starts with a cold page cache as the store's reader
    /// does with a table larger than its cache), the `@Table` model and the
    /// Codable-only model. The order turns with `round`, and each fetch's
    /// models are freed before the next starts: a fetch that ran while another
    /// fetch's 100,000 models were still held took fresh pages from the system
    /// (page faults), 5–10% of its time (measured with `--compare-fetch`).
    static func fetchRound(_ round: Int, rawPath: String, store: Store, people: [Person], into times: inout FetchTimes) throws {
        let count = people.count
        for turn in 0..<3 {
            switch (round + turn) % 3 {
            case 0:
                let reader = openRaw(rawPath)
                var fetched: [Person] = []
                times.raw.append(Harness.seconds { fetched = rawFetch(reader) })
                sqlite3_close_v2(reader)
                precondition(fetched.count == count && fetched[count / 2].firstName == people[count / 2].firstName)
            case 1:
                var typed: [Person] = []
                times.table.append(try Harness.seconds { typed = try store.read { db in try db.fetchAll(Person.self) } })
                precondition(typed.count == count && typed[count / 2].firstName == people[count / 2].firstName)
            default:
                var codable: [CodablePerson] = []
                times.codable.append(try Harness.seconds { codable = try store.read { db in try db.fetchAll(CodablePerson.self) } })
                precondition(codable.count == count && codable[count / 2].email == people[count / 2].email)
            }
        }
    }

    static func run(_ harness: inout Harness, count: Int, repetitions: Int) throws {
        let people = people(count)
        let codablePeople = people.map(CodablePerson.init)
        var rawInserts: [Double] = [], macroInserts: [Double] = [], codableInserts: [Double] = [], loggedInserts: [Double] = []
        var fetches = FetchTimes()
        // The raw C code keeps no change log; the store's comparable setting is the log off.
        var unlogged = Store.Configuration()
        unlogged.logsChanges = false
        for repetition in 0..<repetitions {
            // Raw C API.
            let rawPath = freshDatabasePath("raw")
            let db = openRaw(rawPath)
            sqlite3_exec(db, personSchema, nil, nil, nil)
            rawInserts.append(Harness.seconds { rawInsert(db, people) })

            // Sluice, the @Table model (Person).
            let path = freshDatabasePath("sluice")
            let store = try Store(path: path, configuration: unlogged)
            macroInserts.append(try timedInsert(people, into: store))

            // Fetches of the same rows, interleaved: raw, @Table and Codable
            // take turns, so a slow moment of the machine falls on all three.
            for round in 0..<3 {
                try fetchRound(repetition * 3 + round, rawPath: rawPath, store: store, people: people, into: &fetches)
            }
            sqlite3_close_v2(db)
            removeDatabase(at: rawPath)
            removeDatabase(at: path)

            // Sluice, the Codable-only model.
            let codablePath = freshDatabasePath("codable")
            codableInserts.append(try timedInsert(codablePeople, into: try Store(path: codablePath, configuration: unlogged)))
            removeDatabase(at: codablePath)

            // The default store: the change log on (what it costs is the log's own row).
            let loggedPath = freshDatabasePath("logged")
            loggedInserts.append(try timedInsert(people, into: try Store(path: loggedPath)))
            removeDatabase(at: loggedPath)
        }
        harness.record("insert \(count) people, one transaction (@Table model, log off)", raw: rawInserts, sluice: macroInserts, target: 1.2)
        harness.record("insert \(count) people, one transaction (Codable only, log off)", raw: rawInserts, sluice: codableInserts, target: 1.5)
        harness.record("insert \(count) people, one transaction (@Table model, change log on; 1.2 × the log's 1.5)", raw: rawInserts, sluice: loggedInserts, target: 1.8)
        harness.record("fetch + decode \(count) people (@Table model)", raw: fetches.raw, sluice: fetches.table, target: 1.2)
        harness.record("fetch + decode \(count) people (Codable only)", raw: fetches.raw, sluice: fetches.codable, target: 1.5)
        let label = count.formatted(.number.grouping(.automatic))
        harness.chart.add("insert \(label) people (@Table, one transaction)", sluice: Harness.median(macroInserts), peer: Harness.median(rawInserts),
                          peerName: "the SQLite C API")
        harness.chart.add("fetch + decode \(label) people (@Table)", sluice: Harness.median(fetches.table), peer: Harness.median(fetches.raw),
                          peerName: "the SQLite C API")
    }
}

extension RecordsBenchmark {
    /// Profiling aid: fetches the Codable-only model repeatedly (`--profile-fetch`),
    /// or the `@Table` model (`--profile-fetch-table`).
    static func profileFetch(table: Bool = false) throws {
        let path = freshDatabasePath("profile")
        let store = try Store(path: path)
        try store.write { tx in try tx.execute(script: personSchema) }
        try store.write { tx in for person in people(100_000) { try tx.insert(person) } }
        for _ in 0..<20 {
            let count = table
                ? try store.read { db in try db.fetchAll(Person.self) }.count
                : try store.read { db in try db.fetchAll(CodablePerson.self) }.count
            precondition(count == 100_000)
        }
        removeDatabase(at: path)
    }
}

extension RecordsBenchmark {
    /// Development aid (`--compare-fetch[=rounds]`): one raw database and one
    /// store with the same 100,000 people, fetched in turn for many rounds.
    /// Prints the medians and the median of each round's ratio, which moves
    /// far less with a noisy machine than separate runs of `--only=records`.
    static func compareFetch(rounds: Int) throws {
        let people = people(100_000)
        let rawPath = freshDatabasePath("compare-raw")
        let db = openRaw(rawPath)
        sqlite3_exec(db, personSchema, nil, nil, nil)
        rawInsert(db, people)
        var unlogged = Store.Configuration()
        unlogged.logsChanges = false
        let path = freshDatabasePath("compare")
        let store = try Store(path: path, configuration: unlogged)
        _ = try timedInsert(people, into: store)
        var times = FetchTimes(), floor: [Double] = [], appends: [Double] = []
        for round in 0..<rounds {
            do {
                // Scoped, so its models are freed before the next measurement (see fetchRound).
                let decoder = NothingDecoder()
                var decoded: [CodablePerson] = []
                floor.append(try Harness.seconds {
                    for _ in 0..<people.count { decoded.append(try CodablePerson(from: decoder)) }
                })
                precondition(decoded.count == people.count)
            }
            do {
                // The same appends of the same values, without Codable: what
                // the floor spends that any fetch spends too.
                let one = try CodablePerson(from: NothingDecoder())
                var copies: [CodablePerson] = []
                appends.append(Harness.seconds {
                    for _ in 0..<people.count { copies.append(one) }
                })
                precondition(copies.count == people.count)
            }
            try fetchRound(round, rawPath: rawPath, store: store, people: people, into: &times)
        }
        func ratios(_ values: [Double]) -> String {
            String(format: "%.3f×", Harness.median(zip(values, times.raw).map { $0 / $1 }))
        }
        let (raw, table, codable) = (times.raw, times.table, times.codable)
        print("raw \(Harness.format(Harness.median(raw))), @Table \(Harness.format(Harness.median(table))) (\(ratios(table))), Codable \(Harness.format(Harness.median(codable))) (\(ratios(codable))); Codable alone, decoding from a decoder that reads nothing: \(Harness.format(Harness.median(floor))) (\(ratios(floor)) of raw), of which appending the models \(Harness.format(Harness.median(appends))) (\(ratios(appends))); medians of \(rounds) rounds")
        sqlite3_close_v2(db)
        removeDatabase(at: rawPath)
        removeDatabase(at: path)
    }
}

/// A decoder that reads nothing: every string is "x", every number 1. Decoding
/// a model through it times what `Codable` itself costs per row (the model's
/// synthesized `init(from:)` and the standard library's container box), the
/// floor under any Codable decoder (`--compare-fetch` prints it).
final class NothingDecoder: Decoder {
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    private var cached: AnyObject?
    private var cachedKey: ObjectIdentifier?

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        // The same reuse as the store's decoder: one container for all rows.
        if cachedKey == ObjectIdentifier(Key.self), let cached { return unsafeDowncast(cached, to: Box<Key>.self).container }
        let box = Box(KeyedDecodingContainer(Container<Key>()))
        (cached, cachedKey) = (box, ObjectIdentifier(Key.self))
        return box.container
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "keyed only")) }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "keyed only")) }

    private final class Box<Key: CodingKey> {
        let container: KeyedDecodingContainer<Key>
        init(_ container: KeyedDecodingContainer<Key>) { self.container = container }
    }

    private struct Container<Key: CodingKey>: KeyedDecodingContainerProtocol {
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { [] }
        func contains(_ key: Key) -> Bool { true }
        func decodeNil(forKey key: Key) throws -> Bool { false }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { "x" }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { 1 }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { 1 }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { "x" }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { 1 }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { 1 }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            throw DecodingError.typeMismatch(type, .init(codingPath: [key], debugDescription: "not needed here"))
        }
        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            throw DecodingError.typeMismatch(type, .init(codingPath: [key], debugDescription: "not needed here"))
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw DecodingError.typeMismatch(Int.self, .init(codingPath: [key], debugDescription: "not needed here"))
        }
        func superDecoder() throws -> any Decoder { NothingDecoder() }
        func superDecoder(forKey key: Key) throws -> any Decoder { NothingDecoder() }
    }
}
