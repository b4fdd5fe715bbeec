import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice

/// A foreign writer's `REPLACE` (the `sqlite3` shell, another connection)
/// on a tracked table deletes rows through the rowid and through UNIQUE
/// constraints. Whatever the writer's `recursive_triggers`, the log records
/// those deletions, live queries deliver them exactly (checked against a
/// plain connection), and reading a delivered snapshot never traps.
@Suite(.timeLimit(.minutes(10))) struct ForeignReplaceTests {
    static let schema = """
        CREATE TABLE person (id INTEGER PRIMARY KEY, email TEXT UNIQUE, phone TEXT UNIQUE COLLATE NOCASE, name TEXT);
        CREATE TABLE tag (key TEXT PRIMARY KEY, code TEXT UNIQUE, label TEXT);
        """

    enum Writer: String, CaseIterable, CustomTestStringConvertible {
        case shell, connection
        var testDescription: String { rawValue }
    }

    struct Case: CustomTestStringConvertible, Sendable {
        var capture: ChangeCapture
        var writer: Writer
        var recursiveTriggers: Bool
        var testDescription: String { "\(capture), \(writer.rawValue), recursive_triggers \(recursiveTriggers ? "on" : "off")" }
    }

    static let cases: [Case] = CommitPathTests.captures.flatMap { capture in
        Writer.allCases.flatMap { writer in [false, true].map { Case(capture: capture, writer: writer, recursiveTriggers: $0) } }
    }

    static func run(_ sql: String, _ testCase: Case, store: Store, plain: PlainConnection) throws {
        let script = (testCase.recursiveTriggers ? "PRAGMA recursive_triggers = ON; " : "PRAGMA recursive_triggers = OFF; ") + sql
        switch testCase.writer {
        case .shell: try SQLiteShell.run(path: store.path, script)
        case .connection: try plain.execute(script)
        }
    }

    /// A mirror of `results`, past its first state (`query`'s rows on the plain connection).
    static func mirror(_ results: Results<Row>, showing query: String, _ plain: PlainConnection) throws -> CommitPathTests.RowMirror {
        let mirror = CommitPathTests.RowMirror(results)
        mirror.wait(until: try plain.rows(query))
        _ = mirror.take()
        return mirror
    }

    /// What the mirror received once everything is delivered, checked: no
    /// error, the last state is `query`'s rows, and every delivered snapshot
    /// reads in full without trapping.
    @discardableResult
    static func expectDelivered(_ mirror: CommitPathTests.RowMirror, _ store: Store, _ plain: PlainConnection,
                                _ query: String) throws -> (events: [CollectionChange<Row>], states: [[[SQLiteValue]]]) {
        CommitPathTests.settle(store)
        let taken = mirror.take()
        #expect(taken.errors.isEmpty)
        #expect(taken.states.last == (try plain.rows(query)))
        #expect(taken.events.allSatisfy { $0.results.map { Array($0).count >= 0 } ?? true })
        return (taken.events, taken.states)
    }

    @Test(arguments: cases)
    func replaceThroughTwoUniqueConstraintsIsLoggedAndDelivered(_ testCase: Case) throws {
        let (store, plain) = try CommitPathTests.store(testCase.capture, schema: Self.schema)
        try store.trackForeignWriters(tables: ["person", "tag"])
        try store.write { tx in
            try tx.execute(script: """
                INSERT INTO person VALUES (1, 'a@x', '111', 'Ann'), (2, 'b@x', '222', 'Bo'), (3, 'c@x', '333', 'Cy');
                INSERT INTO tag VALUES ('k1', 'c1', 'one'), ('k2', 'c2', 'two');
                """)
        }
        let start = try store.currentToken
        let query = "SELECT * FROM person ORDER BY name, id"
        let mirror = try Self.mirror(store.rows(in: "person").sorted(byKeyPath: "name"), showing: query, plain)

        // Deletes 1 (same email) and 2 (same phone, another case) and inserts 4.
        try Self.run("REPLACE INTO person (id, email, phone, name) VALUES (4, 'a@x', '222', 'Dee');", testCase, store: store, plain: plain)
        mirror.wait(until: try plain.rows(query))
        // Deletes 3 (same email) and moves 4 there; then the rowid REPLACE of 4 itself.
        try Self.run("UPDATE OR REPLACE person SET email = 'c@x' WHERE id = 4;", testCase, store: store, plain: plain)
        mirror.wait(until: try plain.rows(query))
        try Self.run("INSERT OR REPLACE INTO person VALUES (4, 'd@x', '444', 'Eve');", testCase, store: store, plain: plain)
        mirror.wait(until: try plain.rows(query))
        // A text primary key and a UNIQUE code: both rows go, one comes.
        try Self.run("REPLACE INTO tag VALUES ('k1', 'c2', 'both');", testCase, store: store, plain: plain)
        // Heard before the next commit (the mirror follows people only): an observed
        // boundary keeps the two commits apart in the log (unobserved, one connection's
        // back-to-back commits may be logged as one, a merge, never a split).
        store.waitForObservers()
        // An INSERT OR IGNORE that conflicts replaces nothing and logs nothing.
        try Self.run("INSERT OR IGNORE INTO person VALUES (9, 'd@x', '999', 'Ignored');", testCase, store: store, plain: plain)
        try Self.run("INSERT INTO person (id, email, phone, name) VALUES (5, 'e@x', '555', 'Fay') ON CONFLICT DO NOTHING;", testCase, store: store, plain: plain)
        mirror.wait(until: try plain.rows(query))
        try Self.expectDelivered(mirror, store, plain, query)

        // The rows one statement replaces are logged in SQLite's order when its
        // delete triggers fire (recursive_triggers on), in rowid order when the
        // BEFORE trigger found them; deleting distinct rows commutes.
        let ann = "delete person 1 {id=1,email='a@x',phone='111',name='Ann'} -", bo = "delete person 2 {id=2,email='b@x',phone='222',name='Bo'} -"
        let one = "delete tag 'k1' {key='k1',code='c1',label='one'} -", two = "delete tag 'k2' {key='k2',code='c2',label='two'} -"
        let (people, tags) = testCase.recursiveTriggers ? ("\(bo); \(ann)", "\(two); \(one)") : ("\(ann); \(bo)", "\(one); \(two)")
        let history = try ChangeLogTests.history(store, since: start)
        #expect(history == [
            "nil: \(people); insert person 4 - {id=4,email='a@x',phone='222',name='Dee'}",
            "nil: delete person 3 {id=3,email='c@x',phone='333',name='Cy'} -; update person 4 {email='a@x'} {email='c@x'}",
            "nil: delete person 4 {id=4,email='c@x',phone='222',name='Dee'} -; insert person 4 - {id=4,email='d@x',phone='444',name='Eve'}",
            "nil: \(tags); insert tag 'k1' - {key='k1',code='c2',label='both'}",
            "nil: insert person 5 - {id=5,email='e@x',phone='555',name='Fay'}",
        ])
        #expect(try plain.rows("SELECT count(*) FROM sluice_replaced") == [[.integer(0)]], "the scratch table is left empty")
    }

    /// A unique index on expressions (with a collation and an order) and a
    /// partial unique index: REPLACE deletes through both, and the BEFORE
    /// triggers find those rows whatever `recursive_triggers` is.
    @Test(arguments: cases)
    func replaceThroughAnExpressionAndAPartialIndexIsLoggedAndDelivered(_ testCase: Case) throws {
        let (store, plain) = try CommitPathTests.store(testCase.capture, schema: """
            CREATE TABLE member (id INTEGER PRIMARY KEY, handle TEXT, team TEXT, active INT);
            CREATE UNIQUE INDEX "member (handle)" ON member(lower(trim(handle, ' ,')) COLLATE NOCASE DESC, team);
            CREATE UNIQUE INDEX member_active ON member(team) WHERE active = 1;
            """)
        try store.trackForeignWriters(tables: ["member"])
        try store.write { tx in
            try tx.execute(script: "INSERT INTO member VALUES (1, 'Ann', 't1', 1), (2, 'Bo', 't1', 0), (3, 'Cy', 't2', 1), (4, 'Di', 't2', 0);")
        }
        let start = try store.currentToken
        let query = "SELECT * FROM member ORDER BY handle, id"
        let mirror = try Self.mirror(store.rows(in: "member").sorted(byKeyPath: "handle"), showing: query, plain)

        // ' aNN,' is 'ann' in the expression index (NOCASE): row 1 goes; Bo stays.
        try Self.run("REPLACE INTO member VALUES (5, ' aNN,', 't1', 0);", testCase, store: store, plain: plain)
        mirror.wait(until: try plain.rows(query))
        // Active in t2: the partial index replaces Cy, not Di (inactive).
        try Self.run("REPLACE INTO member VALUES (6, 'Eve', 't2', 1);", testCase, store: store, plain: plain)
        mirror.wait(until: try plain.rows(query))
        // Through both at once, by UPDATE: Bo becomes 'ann' of t1 (deletes 5).
        try Self.run("UPDATE OR REPLACE member SET handle = 'ANN' WHERE id = 2;", testCase, store: store, plain: plain)
        mirror.wait(until: try plain.rows(query))
        try Self.expectDelivered(mirror, store, plain, query)
        #expect(try ChangeLogTests.history(store, since: start) == [
            "nil: delete member 1 {id=1,handle='Ann',team='t1',active=1} -; insert member 5 - {id=5,handle=' aNN,',team='t1',active=0}",
            "nil: delete member 3 {id=3,handle='Cy',team='t2',active=1} -; insert member 6 - {id=6,handle='Eve',team='t2',active=1}",
            "nil: delete member 5 {id=5,handle=' aNN,',team='t1',active=0} -; update member 2 {handle='Bo'} {handle='ANN'}",
        ])
        #expect(try plain.rows("SELECT count(*) FROM sluice_replaced") == [[.integer(0)]])
    }

    /// A foreign writer's savepoints: what `ROLLBACK TO` undoes (the row
    /// changes, the rows REPLACE deleted, the log rows the triggers wrote
    /// and the scratch table) is undone together, so the log keeps only
    /// what committed.
    @Test(arguments: cases)
    func aForeignWritersRolledBackSavepointLeavesNothingInTheLog(_ testCase: Case) throws {
        let (store, plain) = try CommitPathTests.store(testCase.capture, schema: Self.schema)
        try store.trackForeignWriters(tables: ["person"])
        try store.write { tx in
            try tx.execute(script: "INSERT INTO person VALUES (1, 'a@x', '111', 'Ann'), (2, 'b@x', '222', 'Bo');")
        }
        let start = try store.currentToken
        let query = "SELECT * FROM person ORDER BY name, id"
        let mirror = try Self.mirror(store.rows(in: "person").sorted(byKeyPath: "name"), showing: query, plain)
        try Self.run("""
            BEGIN;
            INSERT INTO person VALUES (10, 'j@x', '000', 'Jo');
            SAVEPOINT a;
            INSERT INTO person VALUES (11, 'k@x', '001', 'Kay');
            REPLACE INTO person VALUES (12, 'a@x', '002', 'Lu');
            ROLLBACK TO a;
            REPLACE INTO person VALUES (13, 'b@x', '003', 'Mo');
            SAVEPOINT b;
            UPDATE person SET name = 'Ann 2' WHERE id = 1;
            RELEASE b;
            COMMIT;
            """, testCase, store: store, plain: plain)
        #expect(mirror.wait(until: try plain.rows(query)))
        #expect(try Self.expectDelivered(mirror, store, plain, query).states.count == 1, "one commit, one state")
        // The changes, in order. (A foreign transaction's statements are
        // grouped by the millisecond they ran in, SQLite's 'now' being per
        // statement: the boundaries of a foreign writer's transactions in the
        // log are approximate, their changes exact.)
        let changes = try ChangeLogTests.history(store, since: start).flatMap { $0.dropFirst("nil: ".count).components(separatedBy: "; ") }
        #expect(changes == [
            "insert person 10 - {id=10,email='j@x',phone='000',name='Jo'}", "delete person 2 {id=2,email='b@x',phone='222',name='Bo'} -",
            "insert person 13 - {id=13,email='b@x',phone='003',name='Mo'}", "update person 1 {name='Ann'} {name='Ann 2'}",
        ])
        #expect(try plain.rows("SELECT count(*) FROM sluice_replaced") == [[.integer(0)]])
    }

    /// A writer that turns triggers off (`.dbconfig enable_trigger off` in
    /// the shell) changes a tracked table and logs nothing; one that drops a
    /// trigger changes the schema. Either way live queries re-read and stay
    /// exact, and no delivered snapshot names a row that is gone.
    @Test(arguments: CommitPathTests.captures)
    func writesThatBypassTheTriggersAreStillDelivered(_ capture: ChangeCapture) throws {
        let (store, plain) = try CommitPathTests.store(capture, schema: Self.schema)
        try store.trackForeignWriters(tables: ["person"])
        try store.write { tx in
            try tx.execute(script: "INSERT INTO person VALUES (1, 'a@x', '111', 'Ann'), (2, 'b@x', '222', 'Bo'), (3, 'c@x', '333', 'Cy');")
        }
        let query = "SELECT * FROM person ORDER BY name, id"
        let mirror = try Self.mirror(store.rows(in: "person").sorted(byKeyPath: "name"), showing: query, plain)

        try SQLiteShell.run(path: store.path, ".dbconfig enable_trigger off\nDELETE FROM person WHERE id = 2;\nUPDATE person SET name = 'Zed' WHERE id = 1;\nREPLACE INTO person VALUES (4, 'c@x', '444', 'Ay');")
        #expect(mirror.wait(until: try plain.rows(query)), "a commit that logged nothing is re-read")
        // A logged commit after it: delivered on top of the re-read state (no row 2).
        try SQLiteShell.run(path: store.path, "INSERT INTO person VALUES (5, 'e@x', '555', 'Bee');")
        #expect(mirror.wait(until: try plain.rows(query)))
        try SQLiteShell.run(path: store.path, "DROP TRIGGER sluice_log_person_delete; DELETE FROM person WHERE id = 4;")
        #expect(mirror.wait(until: try plain.rows(query)), "a schema change re-reads")
        try SQLiteShell.run(path: store.path, "DELETE FROM person WHERE id = 1;")
        #expect(mirror.wait(until: try plain.rows(query)), "an unlogged delete after the trigger is gone is re-read")
        try Self.expectDelivered(mirror, store, plain, query)
    }

    @Test func indexTermsAreReadFromTheIndexSQL() {
        #expect(IndexTerms.split(createIndexSQL: "CREATE UNIQUE INDEX \"a (b\" ON \"t(\"(lower(x) COLLATE NOCASE DESC, y ASC, 'a,b' || z, [c)])")
            == ["lower(x) COLLATE NOCASE", "y", "'a,b' || z", "[c)]"])
        #expect(IndexTerms.split(createIndexSQL: "CREATE INDEX i ON t(desc)") == ["desc"])
        #expect(IndexTerms.split(createIndexSQL: "CREATE INDEX i ON t(") == nil)
    }

    @Test func triggersOfAnEarlierVersionAreInstalledAnewWhenTheStoreOpens() throws {
        let database = TemporaryDatabase()
        do {
            let store = try Store(path: database.path, configuration: Store.Configuration(), capture: nil)
            try store.write { tx in try tx.execute(script: Self.schema) }
            try store.trackForeignWriters(tables: ["person"])
        }
        // What an earlier version left: no scratch table, no BEFORE triggers.
        let plain = PlainConnection(path: database.path)
        try plain.execute("DROP TRIGGER sluice_replace_person_insert; DROP TRIGGER sluice_replace_person_update; DROP TABLE sluice_replaced;")
        let store = try Store(path: database.path, configuration: Store.Configuration(), capture: nil)
        #expect(try store.foreignTrackedTables() == ["person"])
        try store.write { tx in try tx.execute(sql: "INSERT INTO person VALUES (1, 'a@x', '111', 'Ann')") }
        let start = try store.currentToken
        try SQLiteShell.run(path: store.path, "REPLACE INTO person VALUES (2, 'a@x', '222', 'Bo');")
        #expect(try ChangeLogTests.history(store, since: start) == [
            "nil: delete person 1 {id=1,email='a@x',phone='111',name='Ann'} -; insert person 2 - {id=2,email='a@x',phone='222',name='Bo'}",
        ])
    }
}
