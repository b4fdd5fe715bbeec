import Foundation
@testable import Sluice
import SluiceTestSupport
import Testing

/// A foreign writer's commit is logged whole: never split across logged
/// transactions, however long it runs; told apart from the next commit
/// wherever a store observed the file between them.
@Suite(.timeLimit(.minutes(10)))
struct ForeignTransactionTests {
    static let schema = """
        CREATE TABLE item (id INTEGER PRIMARY KEY, code TEXT, name TEXT, rank);
        """

    /// A statement that keeps SQLite busy for several milliseconds.
    static let slowStatement = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000) SELECT count(*) FROM c;"

    /// Which commit (its `rank`) each logged transaction's rows came from.
    static func commitsByTransaction(_ store: Store, since token: HistoryToken) throws -> [[Int64]] {
        try store.changes(since: token).map { transaction in
            var ranks: [Int64] = []
            for change in transaction.changes {
                let values = change.new ?? change.old
                if case .integer(let rank)? = values?["rank"], ranks.last != rank { ranks.append(rank) }
            }
            return ranks
        }
    }

    /// A store tracking `item`, a live query of it open, another connection, and the history token to start from.
    static func observedStore(_ capture: ChangeCapture) throws -> (Store, PlainConnection, CommitPathTests.RowMirror, HistoryToken) {
        let (store, plain) = try CommitPathTests.store(capture, schema: schema)
        try store.trackForeignWriters(tables: ["item"])
        let mirror = CommitPathTests.RowMirror(store.rows(in: "item").sorted(byKeyPath: "id"))
        mirror.wait(for: 1)
        return (store, plain, mirror, try store.currentToken)
    }

    /// A shell transaction whose statements lie milliseconds apart is one
    /// logged transaction (it was logged by the millisecond, so split).
    @Test(arguments: CommitPathTests.captures)
    func aLongShellTransactionIsLoggedWhole(capture: ChangeCapture) throws {
        let (store, _) = try CommitPathTests.store(capture, schema: Self.schema)
        try store.trackForeignWriters(tables: ["item"])
        let start = try store.currentToken
        try SQLiteShell.run(path: store.path, """
            BEGIN;
            INSERT INTO item VALUES (1, 'a', 'Ann', 7);
            \(Self.slowStatement)
            INSERT INTO item VALUES (2, 'b', 'Bo', 7);
            \(Self.slowStatement)
            UPDATE item SET name = 'Anna' WHERE id = 1;
            COMMIT;
            """)
        let transactions = try store.changes(since: start)
        #expect(transactions.count == 1, "one commit, one logged transaction: \(transactions.map(\.changes.count))")
        #expect(transactions.first?.changes.count == 3)
    }

    /// Commits by another connection, each seen by an observing store
    /// before the next lands, are logged one transaction each, however
    /// close in time (in one millisecond they shared one).
    @Test(arguments: CommitPathTests.captures)
    func observedForeignCommitsAreLoggedOneEach(capture: ChangeCapture) throws {
        let (store, plain, mirror, start) = try Self.observedStore(capture)
        var expected: [[SQLiteValue]] = []
        for commit in 1...20 {
            let id = Int64(commit)
            try plain.execute("BEGIN; INSERT INTO item VALUES (\(id), 'c', 'x', \(id)); UPDATE item SET name = 'y' WHERE id = \(id); COMMIT;")
            expected.append([.integer(id), .text("c"), .text("y"), .integer(id)])
            #expect(mirror.wait(until: expected))
        }
        let grouped = try Self.commitsByTransaction(store, since: start)
        #expect(grouped == (1...20).map { [Int64($0)] }, "one logged transaction per observed commit")
        let counts = try store.foreignCommitCounts()
        #expect(counts.closed == 20 && counts.mayHoldSeveralCommits == 0, "each known to be one commit: \(counts)")
    }

    /// Back-to-back commits by another connection (and by the shell, one
    /// process) with an observer open: every commit lies inside one logged
    /// transaction; commits the observer could not tell apart may share
    /// one, in order, never split.
    @Test(arguments: CommitPathTests.captures)
    func backToBackForeignCommitsAreNeverSplit(capture: ChangeCapture) throws {
        let (store, plain, mirror, start) = try Self.observedStore(capture)
        var script = ""
        for commit in 1...100 {
            let statements = "INSERT INTO item VALUES (\(commit * 2), 'a', 'x', \(commit)); INSERT INTO item VALUES (\(commit * 2 + 1), 'b', 'x', \(commit));"
            if commit.isMultiple(of: 2) {
                try plain.execute("BEGIN; \(statements) COMMIT;")
            } else {
                script += "BEGIN; \(statements)\(commit.isMultiple(of: 5) ? Self.slowStatement : "") COMMIT;\n"
            }
        }
        try SQLiteShell.run(path: store.path, script)
        #expect(mirror.wait(until: try plain.rows("SELECT * FROM item ORDER BY id")))
        let grouped = try Self.commitsByTransaction(store, since: start)
        let flattened = grouped.flatMap { $0 }
        #expect(Set(flattened).count == flattened.count, "no commit's rows in two logged transactions: \(grouped)")
        #expect(Set(flattened) == Set((1...100).map { Int64($0) }))
        let counts = try store.foreignCommitCounts()
        #expect(counts.closed == grouped.count && counts.mayHoldSeveralCommits <= counts.closed, "\(counts) for \(grouped.count)")
        // Every state the live query delivered ends a logged transaction:
        // what a subscriber saw apart, history holds apart.
        var ends: Set<Set<Int64>> = [[]]
        var rows: Set<Int64> = []
        for commits in grouped {
            for commit in commits { rows.formUnion([commit * 2, commit * 2 + 1]) }
            ends.insert(rows)
        }
        let delivered = mirror.take().states.map { Set($0.compactMap { Int64(sqliteValue: $0[0]) }) }
        #expect(delivered.allSatisfy(ends.contains), "a delivered state inside a logged transaction")
        print("100 back-to-back foreign commits: \(delivered.count - 1) changesets, \(grouped.count) logged transactions, \(counts.mayHoldSeveralCommits) may hold several")
    }

    /// With nothing observing the file, one shell's commits cannot be told
    /// apart: they share one logged transaction, whole, and the log counts
    /// it. Separate shells (new connections) are told apart.
    @Test func unobservedForeignCommitsShareATransactionWhole() throws {
        let (store, _) = try CommitPathTests.store(.preupdateHook, schema: Self.schema)
        try store.trackForeignWriters(tables: ["item"])
        let start = try store.currentToken
        let script = (1...3).map { commit in
            "BEGIN; INSERT INTO item VALUES (\(commit), 'a', 'x', \(commit)); \(Self.slowStatement) UPDATE item SET name = 'y' WHERE id = \(commit); COMMIT;"
        }.joined(separator: "\n")
        try SQLiteShell.run(path: store.path, script)
        try SQLiteShell.run(path: store.path, "UPDATE item SET name = 'z' WHERE id = 1; UPDATE item SET name = 'z' WHERE id = 2;")
        try SQLiteShell.run(path: store.path, "DELETE FROM item WHERE id = 3;")
        #expect(try store.changes(since: start).map(\.changes.count) == [6, 2, 1], "one shell's three commits, then one per shell")
        let counts = try store.foreignCommitCounts()
        #expect(counts.closed == 3 && counts.mayHoldSeveralCommits == 3, "none seen apart: \(counts)")
        // Sluice's own commit after them is a transaction of its own.
        try store.write { tx in try tx.execute(sql: "INSERT INTO item VALUES (4, 'd', 'z', 4)") }
        #expect(try store.changes(since: start).map(\.changes.count) == [6, 2, 1, 1])
    }

    /// A connection that changed many rows before may join the open
    /// transaction of another: merged, in order, never split.
    @Test func aBusyConnectionMayJoinButNeverSplits() throws {
        let (store, plain) = try CommitPathTests.store(.preupdateHook, schema: Self.schema + "CREATE TABLE other (x);")
        try store.trackForeignWriters(tables: ["item"])
        let start = try store.currentToken
        try plain.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50) INSERT INTO other SELECT x FROM c")
        try SQLiteShell.run(path: store.path, "INSERT INTO item VALUES (1, 'a', 'x', 1);")
        try plain.execute("BEGIN; INSERT INTO item VALUES (2, 'a', 'x', 2); \(Self.slowStatement) INSERT INTO item VALUES (3, 'a', 'x', 2); COMMIT;")
        #expect(try Self.commitsByTransaction(store, since: start) == [[1, 2]])
    }

    /// Notes of new connections stop past `LogTriggers.maximumNotes` characters (a long
    /// run of shells with no Sluice writer to seal): later commits merge, never split.
    @Test func notesStopPastTheirLimit() throws {
        let (store, plain) = try CommitPathTests.store(.preupdateHook, schema: Self.schema)
        try store.trackForeignWriters(tables: ["item"])
        let start = try store.currentToken
        try SQLiteShell.run(path: store.path, "INSERT INTO item VALUES (1, 'a', 'x', 1);")
        try plain.execute("UPDATE sluice_transaction SET token = token || '0@1 ' || replace(hex(zeroblob(\(LogTriggers.maximumNotes))), '00', 'x') WHERE token LIKE 'foreign:%'")
        let long = try plain.rows("SELECT length(token) FROM sluice_transaction WHERE token LIKE 'foreign:%'")
        try SQLiteShell.run(path: store.path, "INSERT INTO item VALUES (2, 'b', 'x', 2);")
        #expect(try plain.rows("SELECT length(token) FROM sluice_transaction WHERE token LIKE 'foreign:%'") == long, "no note past the limit")
        #expect(try Self.commitsByTransaction(store, since: start) == [[1, 2]], "merged, whole")
    }
}
