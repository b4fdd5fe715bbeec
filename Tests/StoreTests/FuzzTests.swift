import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

/// Bounded fuzzing with a fixed seed: never a crash or a hang, always a
/// clear error or a correct result. `SLUICE_FUZZ_ITERATIONS` runs longer.
@Suite(.timeLimit(.minutes(10))) struct FuzzTests {
    static let iterations = Int(ProcessInfo.processInfo.environment["SLUICE_FUZZ_ITERATIONS"] ?? "") ?? 3_000

    static let fragments = ["age", "first_name", "city", "email", "==", "=", "!=", "<>", "<", "<=", ">", ">=", "AND", "OR", "NOT",
                            "&&", "||", "!", "(", ")", "{", "}", ",", "IN", "BETWEEN", "LIKE", "BEGINSWITH", "ENDSWITH", "CONTAINS",
                            "[c]", "[", "]", "IS", "NULL", "nil", "true", "false", "'Zoë'", "\"x\"", "'", "\"", "\\", "$0", "$1", "$",
                            "?", "42", "-1", "3.5", "1e3", ".5", "9999999999999999999999", "TRUEPREDICATE", "*", "é", "李", " ", "\n", ";", "--", "/*"]

    @Test func queryParserAndCompilerNeverCrash() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try store.write { tx in
            try tx.insert(Person(firstName: "Zoë", lastName: "Ng", age: 30, city: "Oslo"))
            try tx.insert(Person(firstName: "Ana", lastName: "Kim"))
        }
        var random = SplitMix64(seed: 2026)
        var parsed = 0, rejected = 0
        try store.read { db in
            for _ in 0..<Self.iterations {
                var query = ""
                for _ in 0..<(1 + Int(random.next() % 9)) {
                    if random.next() % 10 == 0 {
                        query.append(Character(UnicodeScalar(UInt8(random.next() % 128))))
                    } else {
                        query += Self.fragments[Int(random.next() % UInt64(Self.fragments.count))] + (random.next() % 2 == 0 ? " " : "")
                    }
                }
                do {
                    let filter = try Filter(query, arguments: [.integer(1), .text("a")])
                    _ = try db.fetchRows(table: "person", filter: filter)
                    parsed += 1
                } catch let error as StoreError {
                    #expect(!error.message.isEmpty)
                    #expect(error.code == .invalidQuery || error.code == .unknownColumn || error.code == .error || error.code == .range,
                            "unexpected error kind for \(query.debugDescription): \(error)")
                    rejected += 1
                }
            }
        }
        #expect(parsed > 0 && rejected > 0)
        #expect(try store.read { db in try db.fetchCount(Person.self) } == 2, "no query changed the data")
    }

    @Test func orderingParserNeverCrashes() {
        var random = SplitMix64(seed: 7)
        let pieces = ["age", "first_name", ",", " ", "DESC", "asc", "x", ";", "'", "(", "é", "", "1"]
        for _ in 0..<Self.iterations {
            let text = (0..<Int(random.next() % 6)).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined()
            do {
                let orderings = try Ordering.parse(text)
                #expect(!orderings.isEmpty)
            } catch let error as StoreError {
                #expect(error.code == .invalidQuery)
            } catch {
                Issue.record("unexpected error \(error)")
            }
        }
    }

    /// Rows of random storage classes in every column: decoding a model
    /// either works or throws a decoding error; never a crash.
    @Test func rowDecoderNeverCrashes() throws {
        let store = try TemporaryDatabase().store()
        try store.write { tx in
            try tx.execute(script: "CREATE TABLE sample (id INTEGER PRIMARY KEY, name, nickname, count, small, score, ratio, flag, payload, created, mood, level, tags, unsigned)")
        }
        var random = SplitMix64(seed: 99)
        func value() -> SQLiteValue {
            switch random.next() % 8 {
            case 0: return .null
            case 1: return .integer(Int64(bitPattern: random.next()))
            case 2: return .integer(Int64(random.next() % 200) - 100)
            case 3: return .real(Double(bitPattern: random.next() & 0x7FEF_FFFF_FFFF_FFFF))
            case 4: return .text(["", "x", "happy", "ünïcödé", "{\"names\":[],\"weight\":1}", "{bad json", "2026-01-01 10:00:00.000", "1.5"][Int(random.next() % 8)])
            case 5: return .blob(Data((0..<Int(random.next() % 5)).map { _ in UInt8(random.next() % 256) }))
            case 6: return .integer(1)
            default: return .text(String(Int(random.next() % 1000)))
            }
        }
        let rows = max(200, Self.iterations / 10)
        try store.write { tx in
            for _ in 0..<rows {
                try tx.execute(sql: "INSERT INTO sample (name, nickname, count, small, score, ratio, flag, payload, created, mood, level, tags, unsigned) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                               arguments: (0..<13).map { _ in value() })
            }
        }
        var decoded = 0, failed = 0
        try store.read { db in
            for id in 1...Int64(rows) {
                do {
                    _ = try db.fetchAll(Sample.self, sql: "SELECT * FROM sample WHERE id = ?", arguments: [.integer(id)])
                    decoded += 1
                } catch let error as StoreError {
                    #expect(error.code == .decoding || error.code == .invalidUse, "\(error)")
                    failed += 1
                }
                let row = try db.fetchRows(sql: "SELECT * FROM sample WHERE id = ?", arguments: [.integer(id)])
                #expect(row.count == 1)
            }
        }
        #expect(failed > 0)
        _ = decoded
    }
}
