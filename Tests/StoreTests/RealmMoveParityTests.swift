import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice

/// When two sets of moves are equally small, Sluice moves the rows Realm
/// moves: realm-core's `calculate()` tests ("reports inserts/deletes for
/// simple reorderings", "prefers to produce diffs where modified rows are
/// the ones to move", "properly recurses into smaller subblocks"), on the
/// builder and through live queries on both changeset paths.
@Suite(.timeLimit(.minutes(10))) struct RealmMoveParityTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var old: [Int]
        var new: [Int]
        var deletions: [Int]
        var insertions: [Int]
        var testDescription: String { "\(old) → \(new)" }
    }

    /// Every reordering of three rows: realm-core's expected deletions and insertions.
    static let reorderings: [Case] = [
        ([1, 2, 3], [1, 3, 2], [2], [1]), ([1, 2, 3], [2, 1, 3], [1], [0]), ([1, 2, 3], [2, 3, 1], [0], [2]),
        ([1, 2, 3], [3, 1, 2], [2], [0]), ([1, 2, 3], [3, 2, 1], [1, 2], [0, 1]),
        ([1, 3, 2], [1, 2, 3], [2], [1]), ([1, 3, 2], [2, 1, 3], [2], [0]), ([1, 3, 2], [2, 3, 1], [1, 2], [0, 1]),
        ([1, 3, 2], [3, 1, 2], [1], [0]), ([1, 3, 2], [3, 2, 1], [0], [2]),
        ([2, 1, 3], [1, 2, 3], [1], [0]), ([2, 1, 3], [1, 3, 2], [0], [2]), ([2, 1, 3], [2, 3, 1], [2], [1]),
        ([2, 1, 3], [3, 1, 2], [1, 2], [0, 1]), ([2, 1, 3], [3, 2, 1], [2], [0]),
        ([2, 3, 1], [1, 2, 3], [2], [0]), ([2, 3, 1], [1, 3, 2], [1, 2], [0, 1]), ([2, 3, 1], [2, 1, 3], [2], [1]),
        ([2, 3, 1], [3, 1, 2], [0], [2]), ([2, 3, 1], [3, 2, 1], [1], [0]),
        ([3, 1, 2], [1, 2, 3], [0], [2]), ([3, 1, 2], [1, 3, 2], [1], [0]), ([3, 1, 2], [2, 1, 3], [1, 2], [0, 1]),
        ([3, 1, 2], [2, 3, 1], [2], [0]), ([3, 1, 2], [3, 2, 1], [2], [1]),
        ([3, 2, 1], [1, 2, 3], [1, 2], [0, 1]), ([3, 2, 1], [1, 3, 2], [2], [0]), ([3, 2, 1], [2, 1, 3], [0], [2]),
        ([3, 2, 1], [2, 3, 1], [1], [0]), ([3, 2, 1], [3, 1, 2], [2], [1]),
    ].map { Case(old: $0.0, new: $0.1, deletions: $0.2, insertions: $0.3) }

    @Test(arguments: reorderings)
    func theBuilderMovesWhatRealmMoves(_ reordering: Case) {
        for facts in [ChangesetBuilder.RowFacts(), ChangesetBuilder.RowFacts(keyChanged: true, modified: true)] {
            let changeset = ChangesetBuilder.diff(old: reordering.old, new: reordering.new) { _ in facts }
            #expect(changeset.deletions == reordering.deletions, "\(facts)")
            #expect(changeset.insertions == reordering.insertions, "\(facts)")
        }
    }

    @Test func aChangedRowIsTheOneToMoveWhenItIsAmbiguous() {
        for (changed, deletions, insertions) in [(2, [1], [2]), (3, [2], [1])] {
            let changeset = ChangesetBuilder.diff(old: [1, 2, 3], new: [1, 3, 2]) { ChangesetBuilder.RowFacts(modified: $0 == changed) }
            #expect(changeset.deletions == deletions)
            #expect(changeset.insertions == insertions)
        }
        // Fewer moves first, even if the row that moves did not change.
        let smaller = ChangesetBuilder.diff(old: [1, 2, 3], new: [2, 3, 1]) { ChangesetBuilder.RowFacts(modified: $0 == 2) }
        #expect(smaller.deletions == [0])
        #expect(smaller.insertions == [2])
    }

    @Test func blocksAreFoundOnBothSidesOfTheLongest() {
        let changeset = ChangesetBuilder.diff(old: [10, 1, 2, 11, 3, 4, 5, 12, 6, 7, 13], new: [13, 1, 2, 12, 3, 4, 5, 11, 6, 7, 10]) { _ in
            ChangesetBuilder.RowFacts(modified: true)
        }
        #expect(changeset.deletions == [0, 3, 7, 10])
        #expect(changeset.insertions == [0, 3, 7, 10])
    }

    /// In a long list, Realm's choice works on runs of rows: two adjacent
    /// rows that swap (both sort keys changed) keep the first in place, as
    /// realm-core does row by row (the longer block before them stays, then
    /// the block after, then the first of the two).
    @Test func aSwapInALongListMovesWhatRealmMoves() throws {
        let old = Array(0..<2_000)
        var new = old
        new.swapAt(500, 501)
        let changeset = ChangesetBuilder.diff(old: old, new: new) { ChangesetBuilder.RowFacts(keyChanged: $0 == 500 || $0 == 501) }
        #expect(changeset.deletions == [501])
        #expect(changeset.insertions == [500])

        // The same through a live query (runs of the incremental path), and a re-query.
        let (store, plain) = try CommitPathTests.store(.preupdateHook)
        try store.write { tx in
            for id in 0..<2_000 { try tx.execute(sql: "INSERT INTO item (id, code, rank) VALUES (?, ?, ?)", arguments: [.integer(Int64(id)), .text("c\(id)"), .integer(Int64(id * 10))]) }
        }
        let results = store.rows(in: "item").sorted(byKeyPath: "rank")
        let mirrors = [CommitPathTests.RowMirror(results), CommitPathTests.RowMirror(results.limit(5_000))]
        for mirror in mirrors { mirror.wait(for: 1); _ = mirror.take() }
        try store.write { tx in try tx.execute(sql: "UPDATE item SET rank = CASE id WHEN 500 THEN 5011 ELSE 5009 END WHERE id IN (500, 501)") }
        for mirror in mirrors { #expect(mirror.wait(until: try plain.rows("SELECT * FROM item ORDER BY rank, id"))) }
        CommitPathTests.settle(store)
        for mirror in mirrors {
            let changesets = mirror.take().events.compactMap(\.changeset)
            #expect(changesets.map(\.deletions) == [[501]])
            #expect(changesets.map(\.insertions) == [[500]])
        }
    }

    /// The six reorderings where the middle row keeps its place: written as
    /// sort keys, it keeps its key too, and only the two others changed.
    /// realm-core's table (above) has no row modified; Realm's rule when
    /// rows are ("prefers to produce diffs where modified rows are the ones
    /// to move when it is ambiguous") moves the two changed rows, and so
    /// does Sluice. (Realm also counts a write of the same value as a
    /// modification; SQLite's row is unchanged then, and Sluice reports nothing.)
    @Test func whenTheMiddleRowKeepsItsKeyTheChangedRowsMove() throws {
        let reversals = Self.reorderings.filter { $0.old[1] == $0.new[1] && $0.old != $0.new }
        #expect(reversals.count == 6)
        for reversal in reversals {
            let kept = reversal.old[1]
            let changeset = ChangesetBuilder.diff(old: reversal.old, new: reversal.new) {
                ChangesetBuilder.RowFacts(keyChanged: $0 != kept, modified: $0 != kept)
            }
            #expect(changeset.deletions == [0, 2] && changeset.insertions == [0, 2], "\(reversal.testDescription)")
        }
        // Through a live query: ranks 0, 1, 2 in the new order (the middle row's stays 1).
        let (store, plain) = try CommitPathTests.store(.preupdateHook)
        try store.write { tx in try tx.execute(sql: "INSERT INTO item (id, code, rank) VALUES (1, 'a', 0), (2, 'b', 1), (3, 'c', 2)") }
        let mirror = CommitPathTests.RowMirror(store.rows(in: "item").sorted(byKeyPath: "rank"))
        mirror.wait(for: 1)
        _ = mirror.take()
        try plain.execute("UPDATE item SET rank = CASE id WHEN 1 THEN 2 WHEN 2 THEN 1 WHEN 3 THEN 0 END")
        #expect(mirror.wait(until: try plain.rows("SELECT * FROM item ORDER BY rank, id")))
        CommitPathTests.settle(store)
        let changesets = mirror.take().events.compactMap(\.changeset)
        #expect(changesets.map(\.deletions) == [[0, 2]] && changesets.map(\.insertions) == [[0, 2]])
    }

    /// The incremental path (row by row) and the re-query path (a limited
    /// query), for commits in-process and on another connection. (When some
    /// rows keep their sort key, they are the ones kept in place, as Realm
    /// keeps unmodified rows: `aChangedRowIsTheOneToMoveWhenItIsAmbiguous`.)
    @Test(arguments: CommitPathTests.captures)
    func liveQueriesMoveWhatRealmMoves(capture: ChangeCapture) throws {
        let (store, plain) = try CommitPathTests.store(capture)
        try store.write { tx in try tx.execute(sql: "INSERT INTO item (id, code, rank) VALUES (1, 'a', 0), (2, 'b', 1), (3, 'c', 2)") }
        let results = store.rows(in: "item").sorted(byKeyPath: "rank")
        let mirrors = [CommitPathTests.RowMirror(results), CommitPathTests.RowMirror(results.limit(10))]
        for mirror in mirrors { mirror.wait(for: 1) }
        // Every row's rank changes at each step (as in realm-core's table,
        // no row is told apart as unchanged).
        var step = 0
        func rank(_ order: [Int]) -> String {
            step += 1
            return "UPDATE item SET rank = CASE id " + order.enumerated().map { "WHEN \($0.element) THEN \(step * 10 + $0.offset)" }.joined(separator: " ") + " END"
        }
        for (index, reordering) in Self.reorderings.enumerated() {
            try store.write { tx in try tx.execute(sql: rank(reordering.old)) }
            let query = "SELECT * FROM item ORDER BY rank, id"
            for mirror in mirrors { #expect(mirror.wait(until: try plain.rows(query))) }
            CommitPathTests.settle(store)
            for mirror in mirrors { _ = mirror.take() }
            // Alternate the writer: in-process, then another connection.
            if index % 2 == 0 {
                try store.write { tx in try tx.execute(sql: rank(reordering.new)) }
            } else {
                try plain.execute(rank(reordering.new))
            }
            for mirror in mirrors { #expect(mirror.wait(until: try plain.rows(query))) }
            CommitPathTests.settle(store)
            for (path, mirror) in zip(["incremental", "re-query"], mirrors) {
                let changesets = mirror.take().events.compactMap(\.changeset)
                #expect(changesets.map(\.deletions) == [reordering.deletions], "\(path), \(reordering.testDescription)")
                #expect(changesets.map(\.insertions) == [reordering.insertions], "\(path), \(reordering.testDescription)")
            }
        }
    }
}
