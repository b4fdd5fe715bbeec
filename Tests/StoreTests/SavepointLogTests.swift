import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice

/// Savepoints written as SQL (`SAVEPOINT`, `ROLLBACK TO`, `RELEASE`) inside a
/// write, as well as `write` nested in `write`: the change log records only
/// what committed, and live queries deliver only that. GRDB's
/// `TransactionObserverSavepointsTests` family, as exact logs, both ways of
/// capturing.
@Suite(.timeLimit(.minutes(10))) struct SavepointLogTests {
    static let schema = """
        CREATE TABLE items1 (id INTEGER PRIMARY KEY, v TEXT);
        CREATE TABLE items2 (id INTEGER PRIMARY KEY, v TEXT);
        CREATE TABLE items3 (id INTEGER PRIMARY KEY, v TEXT);
        CREATE TABLE items4 (id INTEGER PRIMARY KEY, v TEXT);
        """

    /// Runs `statements` one at a time inside one `store.write`, then returns the
    /// log of that transaction and checks each table against a plain connection.
    static func logged(_ capture: ChangeCapture, _ statements: [String]) throws -> [String] {
        let (store, plain) = try CommitPathTests.store(capture, schema: schema)
        let start = try store.currentToken
        let mirror = CommitPathTests.RowMirror(store.rows(in: "items4").sorted(byKeyPath: "id"))
        mirror.wait(for: 1)
        try store.write { tx in
            for sql in statements { try tx.execute(sql: sql) }
        }
        let expected = try plain.rows("SELECT * FROM items4 ORDER BY id")
        mirror.wait(until: expected)
        CommitPathTests.settle(store)
        let taken = mirror.take()
        #expect(taken.errors.isEmpty)
        #expect(taken.states.last == expected)
        // Replaying the log gives the tables.
        let history = try store.changes(since: start)
        for table in ["items1", "items2", "items3", "items4"] {
            var replayed: [Int64: String] = [:]
            for transaction in history {
                for change in transaction.changes where change.table == table {
                    guard case .integer(let key) = change.key else { continue }
                    switch change.operation {
                    case .insert, .update: replayed[key] = change.new.flatMap { String(sqliteValue: $0["v"] ?? .null) } ?? replayed[key] ?? ""
                    case .delete: replayed[key] = nil
                    }
                }
            }
            let rows = try plain.rows("SELECT id, v FROM \(table) ORDER BY id")
            #expect(replayed.keys.sorted() == rows.compactMap { Int64(sqliteValue: $0[0]) }, "the log replays to \(table)")
        }
        return history.map(ChangeLogTests.render)
    }

    @Test(arguments: CommitPathTests.captures)
    func rollingBackToASavepointTwiceLogsOnlyWhatCommitted(capture: ChangeCapture) throws {
        // The case: A, SAVEPOINT, B, ROLLBACK TO, B, ROLLBACK TO, B, commit.
        #expect(try Self.logged(capture, [
            "INSERT INTO items1 VALUES (1, 'a')",
            "SAVEPOINT sp1",
            "INSERT INTO items4 VALUES (1, 'first')",
            "ROLLBACK TO sp1",
            "INSERT INTO items4 VALUES (1, 'second')",
            "ROLLBACK TO sp1",
            "INSERT INTO items4 VALUES (1, 'third')",
        ]) == ["nil: insert items1 1 - {id=1,v='a'}; insert items4 1 - {id=1,v='third'}"])
    }

    @Test(arguments: CommitPathTests.captures)
    func multipleRollbackOfSavepoint(capture: ChangeCapture) throws {
        #expect(try Self.logged(capture, [
            "INSERT INTO items1 VALUES (1, 'a')",
            "SAVEPOINT sp1",
            "INSERT INTO items2 VALUES (1, 'b')",
            "INSERT INTO items3 VALUES (1, 'c')",
            "ROLLBACK TO SAVEPOINT sp1",
            "INSERT INTO items4 VALUES (1, 'd')",
            "ROLLBACK TO SAVEPOINT sp1",
            "INSERT INTO items4 VALUES (1, 'e')",
        ]) == ["nil: insert items1 1 - {id=1,v='a'}; insert items4 1 - {id=1,v='e'}"])
    }

    @Test(arguments: CommitPathTests.captures)
    func savepointInsideTransactionKeepsItsChanges(capture: ChangeCapture) throws {
        #expect(try Self.logged(capture, [
            "INSERT INTO items1 VALUES (1, 'a')",
            "SAVEPOINT sp1",
            "INSERT INTO items2 VALUES (1, 'b')",
        ]) == ["nil: insert items1 1 - {id=1,v='a'}; insert items2 1 - {id=1,v='b'}"])
    }

    @Test(arguments: CommitPathTests.captures)
    func savepointsWithIdenticalNames(capture: ChangeCapture) throws {
        #expect(try Self.logged(capture, [
            "INSERT INTO items1 VALUES (1, 'a')",
            "SAVEPOINT sp1",
            "INSERT INTO items2 VALUES (1, 'b')",
            "SAVEPOINT sp1",
            "INSERT INTO items3 VALUES (1, 'c')",
            "ROLLBACK TO SAVEPOINT sp1",    // the inner one
            "RELEASE SAVEPOINT sp1",
            "RELEASE SAVEPOINT sp1",
            "INSERT INTO items4 VALUES (1, 'd')",
        ]) == ["nil: insert items1 1 - {id=1,v='a'}; insert items2 1 - {id=1,v='b'}; insert items4 1 - {id=1,v='d'}"])
    }

    @Test(arguments: CommitPathTests.captures)
    func releasedSavepointKeepsItsChanges(capture: ChangeCapture) throws {
        #expect(try Self.logged(capture, [
            "INSERT INTO items1 VALUES (1, 'a')",
            "SAVEPOINT sp1",
            "INSERT INTO items2 VALUES (1, 'b')",
            "UPDATE items1 SET v = 'a2' WHERE id = 1",
            "RELEASE SAVEPOINT sp1",
            "INSERT INTO items4 VALUES (1, 'd')",
        ]) == ["nil: insert items1 1 - {id=1,v='a'}; insert items2 1 - {id=1,v='b'}; update items1 1 {v='a'} {v='a2'}; insert items4 1 - {id=1,v='d'}"])
    }

    @Test(arguments: CommitPathTests.captures)
    func rollingBackAnOuterSavepointUndoesAReleasedInnerOne(capture: ChangeCapture) throws {
        #expect(try Self.logged(capture, [
            "INSERT INTO items1 VALUES (1, 'a')",
            "SAVEPOINT sp1",
            "INSERT INTO items2 VALUES (1, 'b')",
            "SAVEPOINT sp2",
            "INSERT INTO items3 VALUES (1, 'c')",
            "RELEASE SAVEPOINT sp2",
            "ROLLBACK TO SAVEPOINT sp1",
            "INSERT INTO items4 VALUES (1, 'd')",
        ]) == ["nil: insert items1 1 - {id=1,v='a'}; insert items4 1 - {id=1,v='d'}"])
    }

    @Test(arguments: CommitPathTests.captures)
    func savepointNamesAreCaseInsensitiveAndRollbackToKeepsTheSavepoint(capture: ChangeCapture) throws {
        #expect(try Self.logged(capture, [
            "SAVEPOINT Outer",
            "INSERT INTO items1 VALUES (1, 'a')",
            "SAVEPOINT inner",
            "UPDATE items1 SET v = 'undone' WHERE id = 1",
            "DELETE FROM items1",
            "rollback transaction to savepoint OUTER",
            "INSERT INTO items2 VALUES (1, 'b')",
            "ROLLBACK TO outer",
            "INSERT INTO items4 VALUES (1, 'd')",
            "RELEASE outer",
        ]) == ["nil: insert items4 1 - {id=1,v='d'}"])
    }

    @Test(arguments: CommitPathTests.captures)
    func rawSavepointsMixWithNestedWrites(capture: ChangeCapture) throws {
        let (store, _) = try CommitPathTests.store(capture, schema: Self.schema)
        let start = try store.currentToken
        struct Refused: Error {}
        try store.write { tx in
            try tx.execute(sql: "SAVEPOINT sp")
            try tx.execute(sql: "INSERT INTO items1 VALUES (1, 'a')")
            _ = try? store.write { inner -> Void in
                try inner.execute(sql: "INSERT INTO items2 VALUES (1, 'gone')")
                throw Refused()
            }
            try store.write { inner in try inner.execute(sql: "INSERT INTO items3 VALUES (1, 'kept')") }
            try tx.execute(sql: "ROLLBACK TO sp")
            try tx.execute(sql: "INSERT INTO items4 VALUES (1, 'd')")
        }
        #expect(try ChangeLogTests.history(store, since: start) == ["nil: insert items4 1 - {id=1,v='d'}"])
    }
}
