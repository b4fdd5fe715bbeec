import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice

/// A commit that changes only rowids (`VACUUM` renumbering a table without
/// an INTEGER PRIMARY KEY, `UPDATE t SET rowid = ...`) leaves every query's
/// result as it was, so it delivers nothing; a later real change is still
/// delivered exactly.
@Suite(.timeLimit(.minutes(10))) struct RowIDRenumberingTests {
    enum Shape: String, CaseIterable, CustomTestStringConvertible {
        case noKey, textKey, compositeKey
        var testDescription: String { rawValue }
        var schema: String {
            switch self {
            case .noKey: "CREATE TABLE t (name TEXT, rank INTEGER)"
            case .textKey: "CREATE TABLE t (name TEXT PRIMARY KEY, rank INTEGER)"
            case .compositeKey: "CREATE TABLE t (name TEXT, rank INTEGER, PRIMARY KEY (name, rank))"
            }
        }
        /// The store's order for `sorted(byKeyPath: "rank")`: ties broken by the primary key.
        var order: String { self == .noKey ? "rank, rowid" : self == .textKey ? "rank, name" : "rank, name, rank" }
    }

    enum Renumbering: String, CaseIterable, CustomTestStringConvertible {
        case ownUpdate, connectionVacuum, shellVacuum, shellUpdate
        var testDescription: String { rawValue }
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var capture: ChangeCapture
        var shape: Shape
        var renumbering: Renumbering
        var rows: Int
        var testDescription: String { "\(capture), \(shape.rawValue), \(renumbering.rawValue), \(rows) rows" }
    }

    static let cases: [Case] = CommitPathTests.captures.flatMap { capture in
        Shape.allCases.flatMap { shape in
            Renumbering.allCases.flatMap { renumbering in [20, 600].map { Case(capture: capture, shape: shape, renumbering: renumbering, rows: $0) } }
        }
    }

    @Test(arguments: cases)
    func onlyRowIDsChangingDeliversNothing(_ testCase: Case) throws {
        let (store, plain) = try CommitPathTests.store(testCase.capture, schema: testCase.shape.schema)
        try store.write { tx in
            for index in 0..<testCase.rows {
                // Ties in rank, so the rowid tie-break orders some rows.
                try tx.execute(sql: "INSERT INTO t (name, rank) VALUES (?, ?)", arguments: [.text("n\(index)"), .integer(Int64(index % 7))])
            }
            // Gaps that VACUUM closes.
            try tx.execute(sql: "DELETE FROM t WHERE rowid % 3 = 0")
        }
        let query = "SELECT * FROM t ORDER BY \(testCase.shape.order)"
        let mirror = CommitPathTests.RowMirror(store.rows(in: "t").sorted(byKeyPath: "rank"))
        let expected = try plain.rows(query)
        mirror.wait(until: expected)
        CommitPathTests.settle(store)
        // A state delivered before the renumbering, held across it.
        let held = try #require(mirror.take().events.last?.results)

        let renumber = "UPDATE t SET rowid = rowid + 100000"
        switch testCase.renumbering {
        case .ownUpdate: try store.write { tx in try tx.execute(sql: renumber) }
        case .connectionVacuum: try plain.execute("VACUUM")
        case .shellVacuum: try SQLiteShell.run(path: store.path, "VACUUM;")
        case .shellUpdate: try SQLiteShell.run(path: store.path, renumber + ";")
        }
        #expect(try plain.rows(query) == expected, "same rows, same order")
        CommitPathTests.settle(store)
        var taken = mirror.take()
        #expect(taken.errors.isEmpty)
        #expect(taken.events.isEmpty, "nothing changed in the result")
        #expect(try held.elements(in: 0..<held.count).map(\.values) == expected, "a held state still reads as it was")

        // The live query still follows: one real change after it.
        try plain.execute("UPDATE t SET rank = 100 WHERE name = 'n1'")
        mirror.wait(until: try plain.rows(query))
        CommitPathTests.settle(store)
        taken = mirror.take()
        #expect(taken.events.count == 1)
        #expect(taken.states.last == (try plain.rows(query)))
    }

    /// A few rows renumbered (the incremental path) beyond the elements a
    /// state caches: a state held from before reads them as they were.
    @Test(arguments: CommitPathTests.captures)
    func aHeldStateReadsRenumberedRowsAsTheyWere(capture: ChangeCapture) throws {
        let (store, plain) = try CommitPathTests.store(capture, schema: Shape.noKey.schema)
        try store.write { tx in
            for index in 0..<1_200 {
                try tx.execute(sql: "INSERT INTO t (name, rank) VALUES (?, ?)", arguments: [.text("n\(index)"), .integer(Int64(index))])
            }
        }
        let query = "SELECT * FROM t ORDER BY rank, rowid"
        let mirror = CommitPathTests.RowMirror(store.rows(in: "t").sorted(byKeyPath: "rank"))
        let expected = try plain.rows(query)
        mirror.wait(until: expected)
        CommitPathTests.settle(store)
        let held = try #require(mirror.take().events.last?.results)
        // The last rows move to new rowids, and another row takes an old one.
        try store.write { tx in
            try tx.execute(sql: "UPDATE t SET rowid = rowid + 100000 WHERE rank >= 1190")
            try tx.execute(sql: "INSERT INTO t (rowid, name, rank) VALUES (1195, 'newcomer', 5000)")
        }
        mirror.wait(until: try plain.rows(query))
        CommitPathTests.settle(store)
        let taken = mirror.take()
        #expect(taken.errors.isEmpty)
        #expect(taken.states.last == (try plain.rows(query)))
        #expect(taken.events.compactMap(\.changeset) == [Changeset(insertions: [1_200])])
        #expect(try held.elements(in: 0..<held.count).map(\.values) == expected, "a held state still reads as it was")
    }
}
