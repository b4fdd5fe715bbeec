import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

/// The durable change log: exact contents for every kind of change, both
/// ways of capturing, foreign writers through triggers, history across
/// restarts, expiry, revert.
@Suite(.timeLimit(.minutes(10))) struct ChangeLogTests {
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

    @Test func historyOfAStoreWithoutALogIsAClearError() throws {
        let database = TemporaryDatabase()
        var configuration = Store.Configuration()
        configuration.logsChanges = false
        let store = try Store(path: database.path, configuration: configuration)
        try store.write { tx in try tx.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY)") }
        let error = try #require(throws: StoreError.self) { try store.changes(since: HistoryToken(databaseID: "abc", sequence: 0)) }
        #expect(error.code == .notFound && error.message.contains("no change log"), "\(error)")
    }

    @Test(arguments: captures)
    func insertsUpdatesAndDeletesAreLoggedWithTheirValues(capture: ChangeCapture) throws {
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
    func replaceCascadesAndTriggersAreLogged(capture: ChangeCapture) throws {
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
    func rollbacksAndRolledBackSavepointsLeaveNothing(capture: ChangeCapture) throws {
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

    /// Inserts into rowid tables are captured by rowid and read from the
    /// table at commit: later changes in the same transaction, savepoints
    /// and schema changes must not change what is logged.
    @Test(arguments: captures)
    func insertsKeepTheirValuesThroughLaterChangesAndSchemaChanges(capture: ChangeCapture) throws {
        let (store, _) = try CommitPathTests.store(capture)
        let start = try store.currentToken
        struct Refused: Error {}
        try store.write { tx in
            try tx.execute(sql: "INSERT INTO item (id, code, name, rank) VALUES (1, 'a', 'A', 1), (2, 'b', 'B', 2), (3, 'c', 'C', 3), (5, 'e', 'E', 5)")
            try tx.execute(sql: "UPDATE item SET name = 'B2' WHERE id = 2")
            try tx.execute(sql: "DELETE FROM item WHERE id = 3")
            _ = try? store.write { inner -> Void in
                try inner.execute(sql: "INSERT INTO item (id, code) VALUES (4, 'd')")
                try inner.execute(sql: "UPDATE item SET name = 'A2' WHERE id = 1")
                throw Refused()
            }
            try tx.execute(sql: "INSERT OR REPLACE INTO item (id, code, name) VALUES (6, 'e', 'F')")
            try tx.execute(sql: "UPDATE item SET id = 7 WHERE id = 1")
        }
        try store.write { tx in
            try tx.execute(sql: "INSERT INTO tag VALUES ('t', 'T', 1.5)")
            try tx.execute(sql: "INSERT INTO item (id, code) VALUES (8, 'h')")
            try tx.execute(sql: "UPDATE item SET name = 'G' WHERE id = 6")
            try tx.execute(sql: "ALTER TABLE tag DROP COLUMN label")
            try tx.execute(sql: "UPDATE tag SET weight = 2 WHERE key = 't'")
            try tx.execute(sql: "CREATE TABLE scratch (id INTEGER PRIMARY KEY, v)")
            try tx.execute(sql: "INSERT INTO scratch VALUES (1, 'gone')")
            try tx.execute(sql: "DROP TABLE scratch")
        }
        #expect(try Self.history(store, since: start) == [
            "nil: insert item 1 - {id=1,code='a',name='A',rank=1}; insert item 2 - {id=2,code='b',name='B',rank=2}; "
                + "insert item 3 - {id=3,code='c',name='C',rank=3}; insert item 5 - {id=5,code='e',name='E',rank=5}; "
                + "update item 2 {name='B'} {name='B2'}; delete item 3 {id=3,code='c',name='C',rank=3} -; "
                + "delete item 5 {id=5,code='e',name='E',rank=5} -; insert item 6 - {id=6,code='e',name='F',rank=NULL}; "
                + "update item 7 {id=1} {id=7}",
            "nil: insert tag 't' - {key='t',label='T',weight=r1.5}; insert item 8 - {id=8,code='h',name=NULL,rank=NULL}; "
                + "update item 6 {name='F'} {name='G'}; update tag 't' {weight=r1.5} {weight=r2.0}; insert scratch 1 - {id=1,v='gone'}",
        ])
    }

    @Test(arguments: captures)
    func valuesKeepTheirStorageClasses(capture: ChangeCapture) throws {
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

    /// `sluice_log_object` (SQL) and `LogValues.encode` (Swift) write the
    /// same text for any value, and it reads back as the value: strings with
    /// characters to escape at every position of the 8-byte scan.
    @Test func theSQLFunctionAndSwiftWriteTheSameJSON() throws {
        let (store, _) = try CommitPathTests.store(.preupdateHook)
        var generator = SystemRandomNumberGenerator()
        let pieces = ["a", "é", "\"", "\\", "\n", "\u{1}", "\u{1F}", " ", "👍", "xyzxyzxy", "\t", "\r", "~", "\u{7F}"]
        var values: [SQLiteValue] = [.null, .integer(0), .integer(.min), .real(0.1), .real(-.infinity), .real(1e300), .blob(Data([0, 1, 254])), .text("")]
        for _ in 0..<400 {
            let count = Int.random(in: 0...24, using: &generator)
            values.append(.text((0..<count).map { _ in pieces.randomElement(using: &generator) ?? "" }.joined()))
            values.append(.integer(Int64.random(in: .min ... .max, using: &generator) >> Int64.random(in: 0...63, using: &generator)))
        }
        values += [.integer(.max), .integer(-1), .integer(10), .integer(999_999_999_999_999_999), .blob(Data(repeating: 7, count: 3_000)), .text(String(repeating: "\"é", count: 2_000))]
        try store.write { tx in
            for value in values {
                let fragments = LogValues.objectFragments(names: ["k", "n\\\""]).map { SQLiteValue.text($0) }
                let sql = try tx.fetchRows(sql: "SELECT sluice_log_object(?, ?, ?, 1, ?)", arguments: [fragments[0], value, fragments[1], fragments[2]]).first?[0]
                let swift = String(decoding: LogValues.encode(names: ["k", "n\\\""], values: [value, .integer(1)], columns: [0, 1]), as: UTF8.self)
                #expect(sql == .text(swift), "\(value)")
                let read = try LogValues.decode(swift)
                #expect(read.map(\.name) == ["k", "n\\\""] && read.first?.value == value, "\(value)")
            }
        }
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
    func revertWritesTheInverseAndRefusesConflicts(capture: ChangeCapture) throws {
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
@Suite(.timeLimit(.minutes(10))) struct ForeignWriterTests {
    static let schema = "CREATE TABLE item (id INTEGER PRIMARY KEY, code TEXT UNIQUE, name TEXT, rank INTEGER); CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT)"

    @Test func theShellFillsTheLogOfTrackedTablesOnly() throws {
        let (store, _) = try CommitPathTests.store(.preupdateHook, schema: Self.schema)
        try store.trackForeignWriters(tables: ["item"])
        #expect(try store.foreignTrackedTables() == ["item"])
        let start = try store.currentToken
        // A live query open: the store sees each shell commit end before
        // the next, and the log tells the three apart.
        let mirror = CommitPathTests.RowMirror(store.rows(in: "item").sorted(byKeyPath: "id"))
        mirror.wait(for: 1)
        try SQLiteShell.run(path: store.path, """
            BEGIN; INSERT INTO item VALUES (1, 'a', 'Ann', 1), (2, 'b', 'Bo', 2.5); INSERT INTO note VALUES (1, 'untracked'); COMMIT;
            """)
        #expect(mirror.wait(until: [[.integer(1), .text("a"), .text("Ann"), .integer(1)], [.integer(2), .text("b"), .text("Bo"), .real(2.5)]]))
        try SQLiteShell.run(path: store.path, "UPDATE item SET name = 'Anna', rank = 3 WHERE id = 1;")
        #expect(mirror.wait(until: [[.integer(1), .text("a"), .text("Anna"), .integer(3)], [.integer(2), .text("b"), .text("Bo"), .real(2.5)]]))
        try SQLiteShell.run(path: store.path, "UPDATE item SET rank = rank WHERE id = 2;")
        try SQLiteShell.run(path: store.path, "DELETE FROM item WHERE id = 2;")
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
        let before = try dump(store).filter { !$0.contains("sluice_log_item") && !$0.contains("sluice_replace_item") && !$0.hasPrefix("sluice_") }
        #expect(try store.untrackForeignWriters() == ["item"])
        #expect(try store.foreignTrackedTables().isEmpty)
        #expect(try dump(store).filter { !$0.hasPrefix("sluice_") } == before)
        try SQLiteShell.run(path: store.path, "INSERT INTO item VALUES (4, 'd', 'Di', 4);")
        #expect(try store.changes(since: start).count == 4, "untracked: the shell logs nothing")
    }

    /// A log made before `first_change` existed (changes found through an
    /// index on `seq`, triggers that do not fill it) is brought up to date
    /// when a store opens it: its history reads the same, and foreign writes after it are logged.
    @Test func aLogFromTheEarlierLayoutIsUpgraded() throws {
        let database = TemporaryDatabase()
        let start: HistoryToken
        let before: [String]
        do {
            let store = try Store(path: database.path)
            try store.write { tx in try tx.execute(script: Self.schema) }
            start = try store.currentToken
            try store.trackForeignWriters(tables: ["item"])
            try store.write { tx in try tx.execute(sql: "INSERT INTO item VALUES (1, 'a', 'Ann', 1), (2, 'b', 'Bo', 2)") }
            try SQLiteShell.run(path: database.path, "UPDATE item SET rank = 5 WHERE id = 1;")
            try store.write { tx in try tx.execute(sql: "DELETE FROM item WHERE id = 2") }
            before = try ChangeLogTests.history(store, since: start)
            #expect(before.count == 3)
        }
        // The earlier layout: no first_change, an index on seq, triggers that do not name first_change.
        let plain = PlainConnection(path: database.path)
        let triggers = try plain.rows("SELECT sql FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'sluice_log_%'").compactMap { String(sqliteValue: $0[0]) }
        #expect(triggers.count == 3)
        try plain.execute("DROP TRIGGER sluice_log_item_insert; DROP TRIGGER sluice_log_item_update; DROP TRIGGER sluice_log_item_delete")
        try plain.execute("ALTER TABLE sluice_transaction DROP COLUMN first_change; CREATE INDEX sluice_change_by_seq ON sluice_change (seq)")
        for sql in triggers {
            let earlier = sql.replacingOccurrences(of: ", first_change)", with: ")").replacingOccurrences(of: ", \(ChangeLog.nextChangeID)", with: "")
                .replacingOccurrences(of: LogTriggers.cutForNewConnection, with: "")
            #expect(!earlier.contains("first_change") && !earlier.contains("max(id)"))
            try plain.execute(earlier)
        }
        // Written in the earlier layout while no store has the file open.
        try SQLiteShell.run(path: database.path, "UPDATE item SET rank = 6 WHERE id = 1;")
        let store = try Store(path: database.path)
        #expect(try plain.rows("SELECT count(*) FROM sqlite_schema WHERE name = 'sluice_change_by_seq'") == [[.integer(0)]])
        #expect(try plain.rows("SELECT count(*) FROM sluice_transaction WHERE first_change IS NULL") == [[.integer(0)]])
        #expect(try store.foreignTrackedTables() == ["item"])
        let earlierWrite = "nil: update item 1 {rank=5} {rank=6}"
        #expect(try ChangeLogTests.history(store, since: start) == before + [earlierWrite])
        try SQLiteShell.run(path: database.path, "INSERT INTO item VALUES (3, 'c', 'Cy', 3);")
        try store.write { tx in try tx.execute(sql: "UPDATE item SET name = 'Cyd' WHERE id = 3") }
        #expect(try ChangeLogTests.history(store, since: start) == before + [
            earlierWrite,
            "nil: insert item 3 - {id=3,code='c',name='Cy',rank=3}",
            "nil: update item 3 {name='Cy'} {name='Cyd'}",
        ])
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
        let reader = Database(connection: try Connection(path: store.path, mode: .readOnly), isReadOnly: true)
        let position = try #require(ChangeLog.position(reader))
        try SQLiteShell.run(path: store.path, "BEGIN; UPDATE item SET rank = 5 WHERE id = 2; INSERT INTO note VALUES (1, 'x'); COMMIT;")
        let changes = try ChangeLog.changes(after: position, on: reader, commit: nil).0
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
