import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice

/// A revert whose rows later transactions changed: refused naming every such row, or, when
/// asked (`revertUnchanged`), the rest reverted and what was left named; and
/// `Database.whenLogged`, which a sync client uses to note who wrote a transaction in the
/// same commit.
@Suite(.timeLimit(.minutes(10))) struct RevertTests {
    static let schema = "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT, rank INTEGER, note TEXT);"

    /// A store whose one transaction (returned) updated items 1 and 2 and inserted item 3;
    /// then item 1's rank and item 3's name were changed by later transactions.
    static func storeWithChangesSince(_ capture: ChangeCapture) throws -> (Store, PlainConnection, LoggedTransaction) {
        let (store, plain) = try CommitPathTests.store(capture, schema: schema)
        try store.write { tx in try tx.execute(sql: "INSERT INTO item VALUES (1, 'Ann', 1, 'a'), (2, 'Bo', 2, 'b')") }
        let start = try store.currentToken
        try store.write { tx in
            try tx.execute(script: "UPDATE item SET rank = 10, note = 'edited' WHERE id = 1; UPDATE item SET name = 'Bob' WHERE id = 2; INSERT INTO item VALUES (3, 'Cy', 3, 'c')")
        }
        let edit = try #require(try store.changes(since: start).first)
        try store.write { tx in try tx.execute(sql: "UPDATE item SET rank = 11 WHERE id = 1") }
        try store.write { tx in try tx.execute(sql: "UPDATE item SET name = 'Cyd' WHERE id = 3") }
        return (store, plain, edit)
    }

    @Test(arguments: CommitPathTests.captures)
    func aRefusedRevertNamesEveryRowChangedSince(_ capture: ChangeCapture) throws {
        let (store, plain, edit) = try Self.storeWithChangesSince(capture)
        let before = try plain.rows("SELECT * FROM item ORDER BY id")
        let error = try #require(throws: StoreError.self) { try store.revert(edit) }
        #expect(error.code == .conflict)
        #expect(error.message.contains("2 rows were changed since") && error.message.contains("item 1 (update): column 'rank'")
                && error.message.contains("item 3 (insert): column 'name'"), "\(error.message)")
        #expect(try plain.rows("SELECT * FROM item ORDER BY id") == before)
        let conflicts = try store.revertConflicts(of: edit)
        #expect(conflicts.map(\.description) == [
            "item 1.rank: column 'rank' was changed later (it is 11 now; the transaction set 10)",
            "item 3: column 'name' was changed later (it is \"Cyd\" now; the transaction set \"Cy\")",
        ])
    }

    @Test(arguments: CommitPathTests.captures)
    func revertUnchangedRevertsTheRestAndNamesWhatItLeft(_ capture: ChangeCapture) throws {
        let (store, plain, edit) = try Self.storeWithChangesSince(capture)
        let expected = try store.revertConflicts(of: edit)
        let outcome = try store.revertUnchanged(edit, author: "undo")
        // Item 1 keeps its later rank and gets its note back; item 2 is reverted; item 3,
        // inserted and renamed since, stays.
        #expect(try plain.rows("SELECT * FROM item ORDER BY id") == [[1, "Ann", 11, "a"], [2, "Bo", 2, "b"], [3, "Cyd", 3, "c"]])
        #expect(outcome.skipped == expected)
        #expect(outcome.skipped.map { "\($0.table) \($0.key) \($0.column ?? "-")" } == ["item 1 rank", "item 3 -"])
        #expect(outcome.transaction?.author == "undo" && outcome.transaction?.changes.count == 2)
        // Nothing left to undo: no transaction; what the partial revert set back counts as changed since too.
        let again = try store.revertUnchanged(edit)
        #expect(again.transaction == nil)
        #expect(again.skipped.map { "\($0.table) \($0.key) \($0.column ?? "-")" } == ["item 1 note", "item 1 rank", "item 2 name", "item 3 -"])
    }

    @Test(arguments: CommitPathTests.captures)
    func whenLoggedRunsInTheCommitWithItsToken(_ capture: ChangeCapture) throws {
        let (store, plain) = try CommitPathTests.store(capture, schema: Self.schema + "CREATE TABLE sluice_note (seq INTEGER, what TEXT);")
        try store.write { tx in
            tx.whenLogged { token in try tx.execute(sql: "INSERT INTO sluice_note VALUES (?, 'insert')", arguments: [.integer(token.sequence)]) }
            try tx.execute(sql: "INSERT INTO item (name) VALUES ('logged')")
        }
        let token = try store.currentToken
        #expect(try plain.rows("SELECT seq, what FROM sluice_note") == [[.integer(token.sequence), "insert"]])
        // Not run when the transaction logs nothing, or rolls back.
        try store.write { tx in
            tx.whenLogged { _ in try tx.execute(sql: "INSERT INTO sluice_note VALUES (0, 'nothing logged')") }
            try tx.execute(sql: "UPDATE item SET name = name")
        }
        _ = try? store.write { tx in
            tx.whenLogged { _ in try tx.execute(sql: "INSERT INTO sluice_note VALUES (0, 'rolled back')") }
            try tx.execute(sql: "INSERT INTO item (name) VALUES ('gone')")
            throw StoreError(code: .error, message: "roll back")
        }
        try store.write { tx in try tx.execute(sql: "INSERT INTO item (name) VALUES ('later')") }
        #expect(try plain.rows("SELECT what FROM sluice_note") == [["insert"]])
        #expect(try store.currentToken.sequence == token.sequence + 1)
    }

    @Test(arguments: CommitPathTests.captures)
    func aRevertNeverDeletesARowThatRowsItLeavesPointAt(_ capture: ChangeCapture) throws {
        let (store, plain) = try CommitPathTests.store(capture, schema: """
            CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE child (id INTEGER PRIMARY KEY, item_id INTEGER REFERENCES item(id) ON DELETE CASCADE, note TEXT);
            """)
        // Both inserted by one transaction, nothing changed since: reverted whole.
        var start = try store.currentToken
        try store.write { tx in try tx.execute(script: "INSERT INTO item VALUES (1, 'one'); INSERT INTO child VALUES (10, 1, 'of one')") }
        let both = try #require(try store.changes(since: start).first)
        try store.revert(both)
        #expect(try plain.rows("SELECT count(*) FROM item") == [[0]] && (try plain.rows("SELECT count(*) FROM child")) == [[0]])
        // A parent a later transaction gave a child: its delete would cascade onto that child.
        start = try store.currentToken
        try store.write { tx in try tx.execute(sql: "INSERT INTO item VALUES (2, 'two')") }
        let parent = try #require(try store.changes(since: start).first)
        try store.write { tx in try tx.execute(sql: "INSERT INTO child VALUES (20, 2, 'later')") }
        let refused = try #require(throws: StoreError.self) { try store.revert(parent) }
        #expect(refused.code == .conflict && refused.message.contains("child row 20 points at it"), "\(refused.message)")
        #expect(try plain.rows("SELECT id FROM child") == [[20]])
        // Both inserted together, the child edited since: the partial revert keeps the child,
        // and so its parent.
        start = try store.currentToken
        try store.write { tx in try tx.execute(script: "INSERT INTO item VALUES (3, 'three'); INSERT INTO child VALUES (30, 3, 'of three')") }
        let family = try #require(try store.changes(since: start).first)
        try store.write { tx in try tx.execute(sql: "UPDATE child SET note = 'edited' WHERE id = 30") }
        let outcome = try store.revertUnchanged(family)
        #expect(outcome.transaction == nil)
        #expect(outcome.skipped.map { "\($0.table) \($0.key)" } == ["child 30", "item 3"])
        #expect(try plain.rows("SELECT id, note FROM child ORDER BY id") == [[20, "later"], [30, "edited"]])
    }
}
