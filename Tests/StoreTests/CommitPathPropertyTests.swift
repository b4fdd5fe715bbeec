import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice

/// Over random workloads on tables that break stores (a generated column,
/// a UNIQUE column, a TEXT PRIMARY KEY, a trigger, a cascade, a table with
/// no key and duplicate rows), with key updates, rowid renumbering and
/// REPLACE, written in-process or by another connection:
/// after every delivered changeset the mirror equals the query re-run on an
/// independent plain connection, and every delivered state is the state
/// after some commit, later than the one delivered before.
@Suite(.timeLimit(.minutes(10)), .serialized) struct CommitPathPropertyTests {
    enum Writer: Sendable { case own, otherConnection }

    static let queries: [(table: String, order: [Ordering], sql: String)] = [
        ("item", [Ordering("rank"), Ordering("name", descending: true)], "SELECT * FROM item ORDER BY rank, name DESC, id"),
        ("item", [Ordering("doubled", descending: true)], "SELECT * FROM item ORDER BY doubled DESC, id"),
        ("tag", [Ordering("label")], "SELECT * FROM tag ORDER BY label, key"),
        ("child", [Ordering("note")], "SELECT * FROM child ORDER BY note, id"),
        ("bag", [Ordering("rank")], "SELECT * FROM bag ORDER BY rank, rowid"),
    ]

    static let schema = CommitPathTests.schema + "\nCREATE TABLE bag (name TEXT, rank INTEGER);"

    static func statement(_ random: inout SeededRandom) -> String {
        let id = random.next(12) + 1
        let rank = random.next(8) == 0 ? "NULL" : String(random.next(20))
        let name = ["'a'", "'B'", "'é'", "'z'", "NULL", "x'00ff'", "3"][random.next(7)]
        let key = ["'k1'", "'k2'", "'K1'", "'k3'"][random.next(4)]
        let label = ["'one'", "'two'", "NULL", "'Zed'", "'ZED'"][random.next(5)]
        if random.next(4) == 0 {
            // The table whose identity is the rowid: duplicates, renumbering.
            switch random.next(5) {
            case 0, 1: return "INSERT INTO bag VALUES (\(name), \(random.next(4)))"
            case 2: return "UPDATE bag SET rowid = rowid + \(random.next(3) == 0 ? -1000 : 1000) WHERE rank = \(random.next(4))"
            case 3: return "UPDATE bag SET rank = \(random.next(4)) WHERE rowid % 5 = \(random.next(5))"
            default: return "DELETE FROM bag WHERE rowid IN (SELECT rowid FROM bag ORDER BY random() LIMIT 1)"
            }
        }
        switch random.next(12) {
        case 0, 1: return "INSERT OR IGNORE INTO item (id, code, name, rank) VALUES (\(id), 'c\(random.next(6))', \(name), \(rank))"
        case 2: return "UPDATE item SET rank = \(rank) WHERE id = \(id)"
        case 3: return "UPDATE OR IGNORE item SET id = \(random.next(12) + 1) WHERE id = \(id)"
        case 4: return "INSERT OR REPLACE INTO item (code, name, rank) VALUES ('c\(random.next(6))', \(name), \(rank))"
        case 5: return "DELETE FROM item WHERE id = \(id)"
        case 6: return "REPLACE INTO tag (key, label, weight) VALUES (\(key), \(label), \(random.next(5)))"
        case 7: return "DELETE FROM tag WHERE key = \(key)"
        case 8: return "UPDATE tag SET label = \(label) WHERE key = \(key)"
        case 9: return "DELETE FROM tag WHERE key = \(key); INSERT OR IGNORE INTO tag (key, label) VALUES (\(key), \(label))"
        case 10: return "UPDATE child SET note = \(label) WHERE id % 3 = \(random.next(3))"
        default: return "UPDATE item SET name = \(name) WHERE rank > \(random.next(20))"
        }
    }

    @Test(arguments: [(ChangeCapture.preupdateHook, Writer.own, UInt64(1)), (.updateHook, .own, 2),
                      (.preupdateHook, .otherConnection, 3), (.updateHook, .otherConnection, 4)])
    func everyDeliveredStateIsACommittedStateAndApplies(capture: ChangeCapture, writer: Writer, seed: UInt64) throws {
        let (store, plain) = try CommitPathTests.store(capture, schema: Self.schema)
        let mirrors = Self.queries.map { CommitPathTests.RowMirror(store.rows(in: $0.table).sorted(by: $0.order)) }
        CommitPathTests.settle(store)
        var expected: [[[[SQLiteValue]]]] = try [Self.queries.map { try plain.rows($0.sql) }]    // states after each commit, per query
        var random = SeededRandom(seed: seed)
        let transactions = writer == .own ? 150 : 60
        for round in 0..<transactions {
            let statements = (0..<(random.next(3) + 1)).map { _ in Self.statement(&random) }
            do {
                switch writer {
                case .own: try store.write { tx in for sql in statements { try tx.execute(script: sql) } }
                case .otherConnection: try plain.execute("BEGIN; " + statements.joined(separator: "; ") + "; COMMIT")
                }
            } catch {
                try? plain.execute("ROLLBACK")
                continue    // a constraint failed: rolled back, nothing to see
            }
            expected.append(try Self.queries.map { try plain.rows($0.sql) })
            if round % 10 == 9 || writer == .otherConnection { CommitPathTests.settle(store) }
        }
        CommitPathTests.settle(store)
        for (index, mirror) in mirrors.enumerated() {
            let (events, states, errors) = mirror.take()
            #expect(errors.isEmpty, "\(Self.queries[index].sql): \(errors)")
            #expect(states.last == expected.last?[index], "\(Self.queries[index].sql): the mirror equals the plain re-query")
            // Each delivered state is a committed state, later than the previous one delivered.
            var position = 0
            for (offset, state) in states.enumerated() {
                guard position < expected.count, let found = expected[position...].firstIndex(where: { $0[index] == state }) else {
                    Issue.record("\(Self.queries[index].sql): delivered state \(offset) of \(events.count) is no commit's state at or after commit \(position)")
                    break
                }
                position = found + 1
            }
        }
    }

    /// The same commits give the same changesets, to the index, whether the
    /// store computes them incrementally (its own writes) or by re-running
    /// the query and diffing (another connection's writes): several rows
    /// changing sort keys at once, ties, inserts, deletes, modifications.
    @Test(arguments: [UInt64(11), 12, 13])
    func bothPathsGiveIdenticalChangesets(seed: UInt64) throws {
        let schema = "CREATE TABLE item (id INTEGER PRIMARY KEY, rank INTEGER, name TEXT)"
        let (own, ownPlain) = try CommitPathTests.store(.preupdateHook, schema: schema)
        let (other, otherPlain) = try CommitPathTests.store(.preupdateHook, schema: schema)
        let rows = (1...40).map { "(\($0), \($0 % 9), 'n\($0)')" }.joined(separator: ", ")
        try own.write { tx in try tx.execute(sql: "INSERT INTO item VALUES \(rows)") }
        try other.write { tx in try tx.execute(sql: "INSERT INTO item VALUES \(rows)") }
        let ownMirror = CommitPathTests.RowMirror(own.rows(in: "item").sorted(by: [Ordering("rank"), Ordering("name")]))
        let otherMirror = CommitPathTests.RowMirror(other.rows(in: "item").sorted(by: [Ordering("rank"), Ordering("name")]))
        ownMirror.wait(for: 1)
        otherMirror.wait(for: 1)
        var random = SeededRandom(seed: seed)
        var nextID = 41
        var moves = 0
        for _ in 0..<80 {
            var statements: [String] = []
            for _ in 0..<(random.next(4) + 1) {
                let id = random.next(nextID - 1) + 1
                switch random.next(6) {
                case 0, 1, 2: statements.append("UPDATE item SET rank = \(random.next(9)) WHERE id = \(id)")
                case 3: statements.append("UPDATE item SET name = 'm\(random.next(50))' WHERE id = \(id)")
                case 4: statements.append("DELETE FROM item WHERE id = \(id)")
                default:
                    statements.append("INSERT INTO item VALUES (\(nextID), \(random.next(9)), 'n\(nextID)')")
                    nextID += 1
                }
            }
            try own.write { tx in for sql in statements { try tx.execute(sql: sql) } }
            try otherPlain.execute("BEGIN; " + statements.joined(separator: "; ") + "; COMMIT")
            // Both mirrors reach the committed state (whatever the machine's
            // speed), then nothing more arrives for this commit.
            let sql = "SELECT * FROM item ORDER BY rank, name, id"
            ownMirror.wait(until: try ownPlain.rows(sql))
            otherMirror.wait(until: try otherPlain.rows(sql))
            CommitPathTests.settle(own)
            CommitPathTests.settle(other)
            let incremental = ownMirror.take().events.compactMap(\.changeset)
            let rediffed = otherMirror.take().events.compactMap(\.changeset)
            #expect(incremental == rediffed, "\(statements)")
            moves += incremental.reduce(0) { $0 + $1.moves.count }
        }
        #expect(moves > 20, "the workload moves rows")
        #expect(ownMirror.take().errors.isEmpty && otherMirror.take().errors.isEmpty)
    }
}

