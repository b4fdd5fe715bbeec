import Foundation
import SluiceTestSupport
import Testing
@testable import Store
import SluiceDemo

/// The durable change log: exact contents for every kind of change, both
/// ways of capturing, foreign writers through triggers, history across
/// restarts, expiry, revert.
@Suite struct ChangeLogTests {
    static let captures = CommitPathTests.captures

    /// A logged transaction as text: `author: op table key old new; ...`.
    static func render(_ transaction: LoggedTransaction) -> String {
        func row(_ row: Row?) -> String {
            guard let row else { return "-" }
            return "{" + zip(row.columns, row.values).map { "\($0)=\(render($1))" }.joined(separator: ",") + "}"
        }
        let changes = transaction.changes.map { "\($0.operation.rawValue) \($0.table) \(render($0.key)) \(row($0.old)) \(row($0.new))" }
        return "\(transaction.author ?? "nil"): " + changes.joined(separator: "; ")
    }

    static func render(_ value: SQLiteValue) -> String {
        switch value {
        case .text(let text): return "'\(text)'"
        case .real(let double): return "r\(double)"
        default: return value.description
        }
    }

    static func history(_ store: Store, since token: HistoryToken) throws -> [String] {
        try store.changes(since: token).map(render)
    }

    @Test(arguments: captures)
    func insertsUpdatesAndDeletesAreLoggedWithTheirValues(capture: ChangeTracker.Capture) throws {
        let (store, _) = try CommitPathTests.store(capture)
        let start = try store.currentToken
        try store.write { tx in
            tx.transactionAuthor = "app"
            try tx.execute(sql: "INSERT INTO item (id, code, name, rank) VALUES (1, 'a', 'Ann', 3), (2, 'b', 'Bo', 4.5)")
        }
        try store.write { tx in try tx.execute(sql: "UPDATE item SET name = 'Anna' WHERE id = 1") }
        try store.write { tx in try tx.execute(sql: "UPDATE tag SET label = 'x' WHERE key = 'none'") }    // changes nothing: not logged
        try store.write { tx in try tx.execute(sql: "INSERT INTO tag VALUES ('k', 'L', 0.1)") }
        try store.write { tx in try tx.execute(sql: "UPDATE tag SET label = 'M', weight = 2 WHERE key = 'k'") }
        try store.write { tx in try tx.execute(sql: "UPDATE item SET name = name WHERE id = 2") }        // same value: not logged
        try store.write { tx in try tx.execute(sql: "DELETE FROM tag") }
        #expect(try Self.history(store, since: start) == [
            "app: insert item 1 - {id=1,code='a',name='Ann',rank=3}; insert item 2 - {id=2,code='b',name='Bo',rank=r4.5}",
            "nil: update item 1 {name='Ann'} {name='Anna'}",
            "nil: insert tag 'k' - {key='k',label='L',weight=r0.1}",
            "nil: update tag 'k' {label='L',weight=r0.1} {label='M',weight=r2.0}",
            "nil: delete tag 'k' {key='k',label='M',weight=r2.0} -",
        ])
        // Tokens are consecutive, and each names everything up to its transaction.
        let all = try store.changes(since: start)
        #expect(all.map(\.token.sequence) == Array(start.sequence + 1...start.sequence + 5))
        #expect(try store.changes(since: all[3].token).map(\.token) == [all[4].token])
        #expect(try store.currentToken == all[4].token)
    }

    @Test(arguments: captures)
    func replaceCascadesAndTriggersAreLogged(capture: ChangeTracker.Capture) throws {
        let (store, _) = try CommitPathTests.store(capture)
        try store.write { tx in try tx.execute(script: "INSERT INTO item (id, code, name, rank) VALUES (1, 'a', 'Ann', 1), (2, 'b', 'Bo', 2); INSERT INTO child VALUES (10, 2, 'of Bo')") }
        let start = try store.currentToken
        // REPLACE through the UNIQUE code deletes row 1 (and nothing cascades from it).
        try store.write { tx in try tx.execute(sql: "INSERT OR REPLACE INTO item (id, code, name, rank) VALUES (3, 'a', 'Ada', 5)") }
        // Deleting 2 cascades to its child; updating a rank fires the user's trigger.
        try store.write { tx in try tx.execute(script: "DELETE FROM item WHERE id = 2; UPDATE item SET rank = 6 WHERE id = 3") }
        // The preupdate hook sees a parent's delete before the cascade; AFTER triggers after it.
        let cascade = capture == .preupdateHook
            ? "delete item 2 {id=2,code='b',name='Bo',rank=2} -; delete child 10 {id=10,item_id=2,note='of Bo'} -"
            : "delete child 10 {id=10,item_id=2,note='of Bo'} -; delete item 2 {id=2,code='b',name='Bo',rank=2} -"
        #expect(try Self.history(store, since: start) == [
            "nil: delete item 1 {id=1,code='a',name='Ann',rank=1} -; insert item 3 - {id=3,code='a',name='Ada',rank=5}",
            "nil: \(cascade); update item 3 {rank=5} {rank=6}; insert child 1 - {id=1,item_id=3,note='rank 6'}",
        ])
    }

    @Test(arguments: captures)
    func rollbacksAndRolledBackSavepointsLeaveNothing(capture: ChangeTracker.Capture) throws {
        let (store, _) = try CommitPathTests.store(capture)
        let start = try store.currentToken
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try store.write { tx in
                try tx.execute(sql: "INSERT INTO item (id, code) VALUES (1, 'gone')")
                throw Refused()
            }
        }
        try store.write { tx in
            try tx.execute(sql: "INSERT INTO item (id, code) VALUES (2, 'kept')")
            _ = try? store.write { inner -> Void in
                try inner.execute(sql: "INSERT INTO item (id, code) VALUES (3, 'undone')")
                throw Refused()
            }
            try store.write { inner in try inner.execute(sql: "UPDATE item SET name = 'inner' WHERE id = 2") }
        }
        #expect(try Self.history(store, since: start) == [
            "nil: insert item 2 - {id=2,code='kept',name=NULL,rank=NULL}; update item 2 {name=NULL} {name='inner'}",
        ])
    }

    @Test(arguments: captures)
    func valuesKeepTheirStorageClasses(capture: ChangeTracker.Capture) throws {
        let (store, _) = try CommitPathTests.store(capture, schema: "CREATE TABLE v (id INTEGER PRIMARY KEY, x)")
        let start = try store.currentToken
        let values: [SQLiteValue] = [.integer(1), .real(1), .real(0.1 + 0.2), .real(-0.0), .real(.infinity), .real(-1e300),
                                     .integer(.max), .integer(.min), .text("1"), .text("é\"\\\n\u{1}👍"), .text(""),
                                     .blob(Data([0, 255, 16])), .blob(Data()), .null]
        try store.write { tx in
            for (offset, value) in values.enumerated() {
                try tx.execute(sql: "INSERT INTO v VALUES (?, ?)", arguments: [.integer(Int64(offset)), value])
            }
        }
        let logged = try #require(try store.changes(since: start).first)
        let read = logged.changes.map { $0.new?["x"] }
        #expect(read == values.map { Optional($0) })
        #expect(read.map { $0?.typeName } == values.map(\.typeName))
        #expect(try logged.changes[2].newValue("x", as: Double.self) == 0.1 + 0.2)
    }

    @Test func historySurvivesARestartAndTokensRoundTrip() throws {
        let database = TemporaryDatabase()
        var token: HistoryToken
        do {
            let store = try database.store(migrations: DemoSchema.migrations)
            token = try store.currentToken
            try store.write { tx in try tx.insert(Person(firstName: "Ana", lastName: "Lee")) }
        }
        let text = token.description
        #expect(HistoryToken(text) == token)
        let encoded = try JSONEncoder().encode(token)
        #expect(try JSONDecoder().decode(HistoryToken.self, from: encoded) == token)
        #expect(HistoryToken("nonsense") == nil)

        let reopened = try database.store()
        let changes = try reopened.changes(since: token)
        #expect(changes.count == 1)
        #expect(try changes.first?.changes.first?.newValue("first_name", as: String.self) == "Ana")
        // A token of another database is refused, not misread.
        let other = try TemporaryDatabase().store()
        let error = try #require(throws: StoreError.self) { try other.changes(since: token) }
        #expect(error.code == .invalidInput && error.message.contains("another database"))
    }

    @Test func expiredTokensFailClearlyAndConsumersHoldRetention() throws {
        let database = TemporaryDatabase()
        var configuration = Store.Configuration()
        configuration.historyRetention = .transactions(2)
        let store = try Store(path: database.path, configuration: configuration)
        try store.write { tx in try tx.execute(script: "CREATE TABLE n (id INTEGER PRIMARY KEY)") }
        let start = try store.currentToken
        try store.registerHistoryConsumer("widget", at: start)
        for id in 1...5 { try store.write { tx in try tx.execute(sql: "INSERT INTO n VALUES (?)", arguments: [.integer(Int64(id))]) } }
        #expect(try store.pruneHistory() == 0, "the widget has not acknowledged anything")
        #expect(try store.changes(since: start).count == 5)
        let all = try store.changes(since: start)
        try store.acknowledge(all[3].token, for: "widget")
        #expect(try store.pruneHistory() == 3, "keeps the newest 2 (and what the widget has not seen)")
        let error = try #require(throws: StoreError.self) { try store.changes(since: start) }
        #expect(error.code == .historyExpired)
        #expect(error.message.contains("expired"))
        #expect(try store.changes(since: all[2].token).count == 2)
    }

    @Test(arguments: captures)
    func revertWritesTheInverseAndRefusesConflicts(capture: ChangeTracker.Capture) throws {
        // No user triggers here: a revert's own writes would fire them again.
        let (store, plain) = try CommitPathTests.store(capture, schema: """
            CREATE TABLE item (id INTEGER PRIMARY KEY, code TEXT UNIQUE, name TEXT, rank INTEGER, doubled INTEGER GENERATED ALWAYS AS (rank * 2) VIRTUAL);
            CREATE TABLE child (id INTEGER PRIMARY KEY, item_id INTEGER REFERENCES item(id) ON DELETE CASCADE, note TEXT);
            """)
        try store.write { tx in try tx.execute(sql: "INSERT INTO item (id, code, name, rank) VALUES (1, 'a', 'Ann', 1), (2, 'b', 'Bo', 2)") }
        try store.write { tx in try tx.execute(sql: "INSERT INTO child VALUES (7, 2, 'of Bo')") }
        let before = try plain.rows("SELECT * FROM item ORDER BY id")
        let start = try store.currentToken
        try store.write { tx in
            try tx.execute(script: "UPDATE item SET name = 'Anna', rank = 7 WHERE id = 1; DELETE FROM item WHERE id = 2; INSERT INTO item (id, code) VALUES (5, 'e')")
        }
        let edit = try #require(try store.changes(since: start).first)
        let undo = try #require(try store.revert(edit, author: "undo"))
        #expect(try plain.rows("SELECT * FROM item ORDER BY id") == before)
        #expect(try plain.rows("SELECT * FROM child") == [[7, 2, "of Bo"]], "the cascaded child is back")
        #expect(try store.changes(since: edit.token).first?.author == "undo")
        // Redo is reverting the revert.
        let undone = try #require(try store.changes(since: edit.token).first)
        #expect(undone == undo)
        try store.revert(undone)
        #expect(try plain.rows("SELECT id, name, rank FROM item ORDER BY id") == [[1, "Anna", 7], [5, nil, nil]])
        // A later change to a value the transaction wrote: refused, nothing written.
        let redo = try #require(try store.changes(since: undo.token).first)
        try store.write { tx in try tx.execute(sql: "UPDATE item SET rank = 8 WHERE id = 1") }
        let snapshot = try plain.rows("SELECT * FROM item ORDER BY id")
        let error = try #require(throws: StoreError.self) { try store.revert(redo) }
        #expect(error.code == .conflict)
        #expect(error.message.contains("item 1") && error.message.contains("'rank'") && error.message.contains("8"), "\(error.message)")
        #expect(try plain.rows("SELECT * FROM item ORDER BY id") == snapshot)
    }

    @Test func migrationsAreLoggedWithTheirAuthor() throws {
        let database = TemporaryDatabase()
        let store = try database.store()
        let start = try store.currentToken
        try store.migrate([Migration(version: 1, name: "seed", sql: "CREATE TABLE z (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO z VALUES (1, 'one')")])
        let logged = try store.changes(since: start)
        #expect(logged.map(Self.render) == ["migration: insert z 1 - {id=1,v='one'}"])
    }
}

/// Writers that are not Sluice fill the log through triggers; other
/// processes' commits then reach live queries through the log.
@Suite struct ForeignWriterTests {
    static let schema = "CREATE TABLE item (id INTEGER PRIMARY KEY, code TEXT UNIQUE, name TEXT, rank INTEGER); CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT)"

    @Test func theShellFillsTheLogOfTrackedTablesOnly() throws {
        let (store, _) = try CommitPathTests.store(.preupdateHook, schema: Self.schema)
        try store.trackForeignWriters(tables: ["item"])
        #expect(try store.foreignTrackedTables() == ["item"])
        let start = try store.currentToken
        try SQLiteShell.run(path: store.path, """
            BEGIN; INSERT INTO item VALUES (1, 'a', 'Ann', 1), (2, 'b', 'Bo', 2.5); INSERT INTO note VALUES (1, 'untracked'); COMMIT;
            UPDATE item SET name = 'Anna', rank = 3 WHERE id = 1;
            UPDATE item SET rank = rank WHERE id = 2;
            DELETE FROM item WHERE id = 2;
            """)
        // Sluice's own writes to a tracked table are logged once, by Sluice.
        try store.write { tx in
            tx.transactionAuthor = "app"
            try tx.execute(sql: "INSERT INTO item VALUES (3, 'c', 'Cy', 0)")
        }
        #expect(try ChangeLogTests.history(store, since: start) == [
            "nil: insert item 1 - {id=1,code='a',name='Ann',rank=1}; insert item 2 - {id=2,code='b',name='Bo',rank=r2.5}",
            "nil: update item 1 {name='Ann',rank=1} {name='Anna',rank=3}",
            "nil: delete item 2 {id=2,code='b',name='Bo',rank=r2.5} -",
            "app: insert item 3 - {id=3,code='c',name='Cy',rank=0}",
        ])
        // untrack removes the triggers and nothing else.
        let before = try dump(store).filter { !$0.contains("sluice_log_item") && !$0.hasPrefix("sluice_") }
        #expect(try store.untrackForeignWriters() == ["item"])
        #expect(try store.foreignTrackedTables().isEmpty)
        #expect(try dump(store).filter { !$0.hasPrefix("sluice_") } == before)
        try SQLiteShell.run(path: store.path, "INSERT INTO item VALUES (4, 'd', 'Di', 4);")
        #expect(try store.changes(since: start).count == 4, "untracked: the shell logs nothing")
    }

    @Test func badTablesAreRefusedAndNothingIsInstalled() throws {
        let (store, _) = try CommitPathTests.store(.preupdateHook, schema: Self.schema + "; CREATE VIEW v AS SELECT * FROM item")
        let unknown = try #require(throws: StoreError.self) { try store.trackForeignWriters(tables: ["item", "nope"]) }
        #expect(unknown.code == .unknownTable && unknown.message.contains("nope"))
        let view = try #require(throws: StoreError.self) { try store.trackForeignWriters(tables: ["v"]) }
        #expect(view.code == .unsupportedTable)
        #expect(try store.foreignTrackedTables().isEmpty)
    }

    @Test func anotherProcessesCommitReachesTheLogReaderAsExactRows() throws {
        let (store, _) = try CommitPathTests.store(.preupdateHook, schema: Self.schema)
        try store.trackForeignWriters(tables: ["item"])
        try store.write { tx in try tx.execute(sql: "INSERT INTO item VALUES (1, 'a', 'Ann', 1), (2, 'b', 'Bo', 2)") }
        let reader = try Store(path: store.path)
        let position = try #require(reader.withReader({ db in ChangeLog.position(db) }, fallback: nil))
        try SQLiteShell.run(path: store.path, "BEGIN; UPDATE item SET rank = 5 WHERE id = 2; INSERT INTO note VALUES (1, 'x'); COMMIT;")
        let changes = try #require(reader.withReader({ db in try? ChangeLog.changes(after: position, on: db).0 }, fallback: nil))
        #expect(changes.change(in: "item") == .rows([2]), "tracked: exactly the row the shell changed")
        #expect(changes.change(in: "note") == .unknown, "untracked: unknown")
        #expect(!changes.schemaChanged)
    }

    @Test func aTrackedShellCommitIsOneExactChangeset() throws {
        let (store, plain) = try CommitPathTests.store(.preupdateHook, schema: Self.schema)
        try store.trackForeignWriters(tables: ["item"])
        try store.write { tx in try tx.execute(sql: "INSERT INTO item VALUES (1, 'a', 'Ann', 1), (2, 'b', 'Bo', 2), (3, 'c', 'Cy', 3)") }
        let mirror = CommitPathTests.RowMirror(store.rows(in: "item").sorted(byKeyPath: "rank"))
        mirror.wait(until: try plain.rows("SELECT * FROM item ORDER BY rank"))
        _ = mirror.take()
        try SQLiteShell.run(path: store.path, "BEGIN; UPDATE item SET rank = 0 WHERE id = 3; UPDATE item SET name = 'Bob' WHERE id = 2; COMMIT;")
        mirror.wait(until: try plain.rows("SELECT * FROM item ORDER BY rank"))
        let (events, _, errors) = mirror.take()
        #expect(errors.isEmpty)
        #expect(events.count == 1)
        let changeset = try #require(events.first?.changeset)
        #expect(changeset.deletions == [2] && changeset.insertions == [0] && changeset.modifications == [1])
    }

    @Test func migrationsKeepTrackingAndCanDropTrackedColumns() throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: [Migration(version: 1, name: "item", sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, old TEXT, name TEXT)")])
        try store.trackForeignWriters(tables: ["item"])
        try store.migrate([
            Migration(version: 1, name: "item", sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, old TEXT, name TEXT)"),
            Migration(version: 2, name: "drop old", sql: "ALTER TABLE item DROP COLUMN old; ALTER TABLE item ADD COLUMN rank INTEGER"),
        ])
        #expect(try store.foreignTrackedTables() == ["item"])
        let start = try store.currentToken
        try SQLiteShell.run(path: store.path, "INSERT INTO item VALUES (1, 'Ann', 4);")
        #expect(try ChangeLogTests.history(store, since: start) == ["nil: insert item 1 - {id=1,name='Ann',rank=4}"])
    }
}
