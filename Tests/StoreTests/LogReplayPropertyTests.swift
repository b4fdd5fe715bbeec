import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice

/// Random transactions with random savepoints (raw `SAVEPOINT`, `ROLLBACK
/// TO`, `RELEASE`, and `Database.savepoint` bodies that throw), statements
/// that fail halfway (a multi-row INSERT whose second row conflicts),
/// `REPLACE` through a rowid and a UNIQUE column, key updates, a trigger, a
/// key-less table and every storage class, some transactions rolled back
/// whole: the change log, replayed from the start, gives exactly the tables
/// a plain connection reads.
@Suite(.timeLimit(.minutes(10))) struct LogReplayPropertyTests {
    static let schema = """
        CREATE TABLE a (id INTEGER PRIMARY KEY, code TEXT UNIQUE, v);
        CREATE TABLE b (k TEXT PRIMARY KEY, n INTEGER, w);
        CREATE TABLE bag (x, y);
        CREATE TRIGGER a_bag AFTER INSERT ON a WHEN NEW.id % 4 = 0 BEGIN INSERT INTO bag VALUES (NEW.id, 'from a'); END;
        """
    static let tables = ["a", "b", "bag"]

    struct Rollback: Error {}

    static func value(_ random: inout SeededRandom) -> SQLiteValue {
        switch random.next(6) {
        case 0: return .null
        case 1: return .integer(Int64(random.next(100)) - 50)
        case 2: return .real(Double(random.next(1000)) / 8)
        case 3: return .text(["x", "y", "é", "", "a\u{0}b"][random.next(5)])
        case 4: return .blob(Data([UInt8(random.next(256)), 0, 7]))
        default: return .integer(Int64(random.next(3)))
        }
    }

    /// One random statement and its arguments.
    static func statement(_ random: inout SeededRandom) -> (String, [SQLiteValue]) {
        let id = SQLiteValue.integer(Int64(1 + random.next(16)))
        let code: SQLiteValue = random.next(5) == 0 ? .null : .text("c\(random.next(6))")
        let key = SQLiteValue.text("k\(random.next(6))")
        switch random.next(13) {
        case 0: return ("INSERT OR IGNORE INTO a (id, code, v) VALUES (?, ?, ?)", [id, code, value(&random)])
        case 1: return ("INSERT OR REPLACE INTO a (id, code, v) VALUES (?, ?, ?)", [id, code, value(&random)])
        case 2: return ("UPDATE OR REPLACE a SET code = ?, v = ? WHERE id = ?", [code, value(&random), id])
        case 3: return ("UPDATE OR IGNORE a SET id = ? WHERE id = ?", [.integer(Int64(1 + random.next(16))), id])
        case 4: return ("DELETE FROM a WHERE id % 5 = ?", [.integer(Int64(random.next(5)))])
        // Fails at its second row (the same code twice): the first is undone.
        case 5: return ("INSERT INTO a (id, code, v) VALUES (?, 'dup', 1), (?, 'dup', 2)", [.integer(Int64(20 + random.next(10))), .integer(Int64(30 + random.next(10)))])
        case 6: return ("INSERT OR REPLACE INTO b VALUES (?, ?, ?)", [key, .integer(Int64(random.next(9))), value(&random)])
        case 7: return ("UPDATE b SET n = n + 1, w = ? WHERE k = ?", [value(&random), key])
        case 8: return ("UPDATE OR REPLACE b SET k = ? WHERE k = ?", [.text("k\(random.next(6))"), key])
        case 9: return ("DELETE FROM b WHERE k = ?", [key])
        case 10: return ("INSERT INTO bag VALUES (?, ?)", [value(&random), value(&random)])
        case 11: return ("UPDATE bag SET y = ? WHERE rowid = (SELECT max(rowid) FROM bag)", [value(&random)])
        default: return ("DELETE FROM bag WHERE rowid = (SELECT min(rowid) FROM bag)", [])
        }
    }

    static func run(_ random: inout SeededRandom, on tx: Database) {
        let (sql, arguments) = statement(&random)
        _ = try? tx.execute(sql: sql, arguments: arguments)    // a failing statement leaves the transaction going
    }

    /// A statement that fails inside a transaction: under ABORT (the
    /// default) SQLite undoes the rows it changed before the failing one,
    /// and their triggers' rows; under FAIL they stay. The log records
    /// exactly what stayed.
    @Test(arguments: CommitPathTests.captures)
    func aFailedStatementLogsOnlyWhatItKept(capture: ChangeCapture) throws {
        let (store, plain) = try CommitPathTests.store(capture, schema: """
            CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE);
            CREATE TABLE side (id INTEGER PRIMARY KEY, note);
            CREATE TRIGGER t_side AFTER INSERT ON t BEGIN INSERT INTO side (note) VALUES (NEW.v); END;
            """)
        let start = try store.currentToken
        try store.write { tx in
            try tx.execute(sql: "INSERT INTO t VALUES (1, 'a')")
            #expect(throws: StoreError.self) { try tx.execute(sql: "INSERT INTO t VALUES (2, 'b'), (3, 'a')") }
            #expect(throws: StoreError.self) { try tx.execute(sql: "INSERT OR FAIL INTO t VALUES (4, 'c'), (5, 'a')") }
            #expect(throws: StoreError.self) { try tx.execute(sql: "UPDATE t SET v = 'q'") }
        }
        #expect(try ChangeLogTests.history(store, since: start) == [
            "nil: insert t 1 - {id=1,v='a'}; insert side 1 - {id=1,note='a'}; insert t 4 - {id=4,v='c'}; insert side 2 - {id=2,note='c'}",
        ])
        #expect(try plain.rows("SELECT * FROM t ORDER BY id") == [[.integer(1), .text("a")], [.integer(4), .text("c")]])
    }

    @Test(arguments: CommitPathTests.captures, [UInt64(1), 2, 3])
    func theLogReplaysToTheTables(capture: ChangeCapture, seed: UInt64) throws {
        let (store, plain) = try CommitPathTests.store(capture, schema: Self.schema)
        let start = try store.currentToken
        var random = SeededRandom(seed: seed)
        var rolledBack = 0
        for _ in 0..<60 {
            do {
                try store.write { tx in
                    var open: [String] = []
                    for step in 0..<(1 + random.next(14)) {
                        switch random.next(10) {
                        case 0:
                            open.append("sp\(step % 3)")    // names repeat: the innermost of a name is meant
                            try tx.execute(sql: "SAVEPOINT \(open[open.count - 1])")
                        case 1 where !open.isEmpty:
                            let depth = random.next(open.count)
                            try tx.execute(sql: "ROLLBACK TO \(open[depth])")
                            open.removeSubrange((open.lastIndex(of: open[depth]) ?? depth).advanced(by: 1)...)
                        case 2 where !open.isEmpty:
                            let depth = random.next(open.count)
                            try tx.execute(sql: "RELEASE \(open[depth])")
                            open.removeSubrange((open.lastIndex(of: open[depth]) ?? depth)...)
                        case 3:
                            let fails = random.next(3) == 0
                            _ = try? tx.savepoint { inner in
                                for _ in 0..<(1 + random.next(4)) { Self.run(&random, on: inner) }
                                if fails { throw Rollback() }
                            }
                        default:
                            Self.run(&random, on: tx)
                        }
                    }
                    if random.next(8) == 0 { throw Rollback() }
                }
            } catch is Rollback {
                rolledBack += 1
            }
        }
        #expect(rolledBack > 0)

        // Replay: each table's rows by rowid, from nothing.
        var images: [String: [Int64: [String: SQLiteValue]]] = [:]
        var counts: [RowChange.Operation: Int] = [:]
        for transaction in try store.changes(since: start) {
            for change in transaction.changes {
                counts[change.operation, default: 0] += 1
                var image = images[change.table] ?? [:]
                switch change.operation {
                case .insert:
                    #expect(image[change.rowID] == nil, "an insert of a row that is there: \(change)")
                    image[change.rowID] = change.new.map { Dictionary(uniqueKeysWithValues: zip($0.columns, $0.values)) } ?? [:]
                case .update:
                    let from = change.oldRowID ?? change.rowID
                    var row = image.removeValue(forKey: from) ?? [:]
                    #expect(!row.isEmpty, "an update of a row that is not there: \(change)")
                    for (column, value) in zip(change.new?.columns ?? [], change.new?.values ?? []) { row[column] = value }
                    image[change.rowID] = row
                case .delete:
                    #expect(image.removeValue(forKey: change.rowID) != nil, "a delete of a row that is not there: \(change)")
                }
                images[change.table] = image
            }
        }
        #expect(counts[.insert, default: 0] > 20 && counts[.update, default: 0] > 5 && counts[.delete, default: 0] > 5, "\(counts)")
        for table in Self.tables {
            let rows = try plain.rows("SELECT rowid, * FROM \(table)")
            let columns = try plain.rows("SELECT name FROM pragma_table_info('\(table)') ORDER BY cid").compactMap { String(sqliteValue: $0[0]) }
            var expected: [Int64: [String: SQLiteValue]] = [:]
            for row in rows {
                guard case .integer(let rowID) = row[0] else { continue }
                expected[rowID] = Dictionary(uniqueKeysWithValues: zip(columns, row.dropFirst()))
            }
            #expect(images[table] ?? [:] == expected, "the log replays to \(table)")
        }
    }
}
