import Foundation
import Sluice
import SluiceTestSupport

/// Random write transactions on the demo `person` table: inserts, updates,
/// deletes and bulk statements, with non-ASCII names, case variants and NULLs.
struct Workload {
    struct Statement {
        let sql: String
        let arguments: [SQLiteValue]

        /// The statement with its arguments inlined as SQL literals (for the sqlite3 shell).
        var inlined: String {
            var result = ""
            var remaining = arguments[...]
            for character in sql {
                if character == "?", let value = remaining.first {
                    remaining = remaining.dropFirst()
                    result += Self.literal(value)
                } else {
                    result.append(character)
                }
            }
            return result
        }

        static func literal(_ value: SQLiteValue) -> String {
            switch value {
            case .null: return "NULL"
            case .integer(let int): return String(int)
            case .real(let double): return "\(double)"
            case .text(let text): return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
            case .blob(let data): return "x'" + data.map { String(format: "%02x", $0) }.joined() + "'"
            }
        }
    }

    static let names = ["zoë", "Zoë", "ZOË", "Zoe", "Émile", "e\u{301}mile", "émile", "李", "Ødegaard", "o", "", "b", "B", "Bob",
                        "Ana", "ana", "Łukasz", "O'Brien", "a b", "z", "Zz", "🚀"]
    static let cities: [String?] = ["Oslo", "oslo", "OSLO", "Berlin", nil, "Zürich", "zürich", "São Paulo"]

    var random: SeededRandom

    init(seed: UInt64) { random = SeededRandom(seed: seed) }

    private mutating func pick<T>(_ items: [T]) -> T { items[random.next(items.count)] }

    private mutating func age() -> SQLiteValue { random.next(8) == 0 ? .null : .integer(Int64(random.next(90))) }
    private mutating func email() -> SQLiteValue { random.next(4) == 0 ? .null : .text("\(pick(Self.names))\(random.next(5))@x") }
    private mutating func city() -> SQLiteValue { pick(Self.cities).map { .text($0) } ?? .null }
    private mutating func name() -> SQLiteValue { .text(pick(Self.names)) }

    /// One transaction's statements, given the ids that exist now.
    mutating func transaction(ids: [Int64]) -> [Statement] {
        var statements: [Statement] = []
        for _ in 0..<(1 + random.next(4)) {
            let roll = random.next(100)
            let id: SQLiteValue = ids.isEmpty ? .integer(1) : .integer(ids[random.next(ids.count)])
            switch roll {
            case 0..<35:
                statements.append(Statement(sql: "INSERT INTO person (first_name, last_name, age, email, city) VALUES (?, ?, ?, ?, ?)",
                                            arguments: [name(), name(), age(), email(), city()]))
            case 35..<60:
                let column = pick(["first_name", "last_name", "age", "email", "city"])
                let value: SQLiteValue
                switch column {
                case "age": value = age()
                case "email": value = email()
                case "city": value = city()
                default: value = name()
                }
                statements.append(Statement(sql: "UPDATE person SET \(column) = ? WHERE id = ?", arguments: [value, id]))
            case 60..<72:
                statements.append(Statement(sql: "DELETE FROM person WHERE id = ?", arguments: [id]))
            case 72..<78:
                statements.append(Statement(sql: "UPDATE person SET age = age + 1 WHERE age < ?", arguments: [.integer(Int64(random.next(60)))]))
            case 78..<82:
                statements.append(Statement(sql: "DELETE FROM person WHERE city = ?", arguments: [city()]))
            case 82..<88:
                statements.append(Statement(sql: "INSERT INTO person (first_name, last_name, age, city) SELECT first_name || 'x', last_name, age, city FROM person WHERE id % 7 = ? LIMIT 15",
                                            arguments: [.integer(Int64(random.next(7)))]))
            case 88..<94:
                statements.append(Statement(sql: "UPDATE person SET age = age WHERE id = ?", arguments: [id]))
            default:
                statements.append(Statement(sql: "UPDATE person SET first_name = upper(first_name) WHERE id % 5 = ?", arguments: [.integer(Int64(random.next(5)))]))
            }
        }
        return statements
    }
}

/// A live query's result rebuilt only from its changesets, to compare with a re-run.
final class Mirror<Element: Sendable> {
    let name: String
    let results: Results<Element>
    let recorder: ChangeRecorder<Element>
    var array: [Element] = []

    init(_ name: String, _ results: Results<Element>, keyPaths: [String]? = nil) {
        self.name = name
        self.results = results
        recorder = ChangeRecorder(results, keyPaths: keyPaths)
    }

    /// Applies what arrived; returns how many changesets that was.
    @discardableResult
    func catchUp() -> Int {
        let events = recorder.take()
        for event in events { event.apply(to: &array) }
        return events.count
    }
}

extension ChangesetPropertyTests.Writer {
    /// Commits one random transaction of a workload over `person` (given the ids there are now) by this writer:
    /// `store` itself, `other` (another `Store` on the file), or the sqlite3 shell.
    func commitNext(_ workload: inout Workload, store: Store, other: Store?, path: String) throws -> [Workload.Statement] {
        let ids = try store.read { db in try db.fetchRows(sql: "SELECT id FROM person").compactMap { Int64(sqliteValue: $0[0]) } }
        let statements = workload.transaction(ids: ids)
        switch self {
        case .otherConnection, .trackedOtherConnection:
            try other?.write { tx in for statement in statements { try tx.execute(sql: statement.sql, arguments: statement.arguments) } }
        case .sqliteShell, .trackedShell:
            try SQLiteShell.run(path: path, "BEGIN;\n" + statements.map { $0.inlined + ";" }.joined(separator: "\n") + "\nCOMMIT;")
        case .own, .ownBursts:
            try store.write { tx in for statement in statements { try tx.execute(sql: statement.sql, arguments: statement.arguments) } }
        }
        return statements
    }
}
