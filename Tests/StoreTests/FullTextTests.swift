import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

/// Full-text search: an index declared in a migration stays in step with its
/// table whoever writes (this store, another connection, the sqlite3 shell,
/// REPLACE included), `MATCH` filters combine with the others, a malformed
/// full-text query is an `invalidQuery` error with a caret, live queries
/// follow matches exactly, and the index is never logged. Expected rows come
/// from plain connections.
@Suite(.timeLimit(.minutes(10))) struct FullTextTests {
    static let schema = Migration(version: 1, name: "create_person", sql: """
        CREATE TABLE person (id INTEGER PRIMARY KEY, first_name TEXT NOT NULL, last_name TEXT NOT NULL, age INTEGER,
                             email TEXT UNIQUE, street TEXT, city TEXT, postal_code TEXT, country TEXT);
        """)
    static let index = FullTextIndex(table: "person", columns: ["first_name", "last_name", "city"])

    static func store(_ tokenizer: FullTextIndex.Tokenizer = .unicode61()) throws -> (Store, PlainConnection) {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: [schema])
        try store.write { tx in
            for (first, last, city, age) in [("Zoë", "Ng", "Oslo", 34), ("Émile", "Durand", "Paris", 51), ("Ana", "Kim", "oslo", 28),
                                             ("Bo", "Zoellner", "Bergen", 40), ("李", "小龙", "北京市", 33)] {
                try tx.execute(sql: "INSERT INTO person (first_name, last_name, city, age) VALUES (?, ?, ?, ?)",
                               arguments: [.text(first), .text(last), .text(city), .integer(Int64(age))])
            }
        }
        let index = FullTextIndex(table: "person", columns: ["first_name", "last_name", "city"], tokenizer: tokenizer)
        try store.migrate([schema, .fullTextIndex(version: 2, index)])
        return (store, PlainConnection(path: database.path))
    }

    /// The ids that match, by the store.
    static func ids(_ store: Store, _ filter: Filter) throws -> [Int64] {
        try store.read { db in try db.fetchRows(table: "person", filter: filter) }.compactMap { Int64(sqliteValue: $0[0]) }
    }

    /// The index holds exactly the table's rows and text (an FTS5 table with content can be read back).
    static func expectInStep(_ plain: PlainConnection, _ context: Comment) throws {
        let indexed = try plain.rows("SELECT rowid, first_name, last_name, city FROM sluice_fts_person ORDER BY rowid")
        let rows = try plain.rows("SELECT rowid, first_name, last_name, city FROM person ORDER BY rowid")
        #expect(indexed == rows, context)
    }

    @Test func aMigrationIndexesTheRowsThereAreAndMatchingFindsWords() throws {
        let (store, plain) = try Self.store()
        try Self.expectInStep(plain, "the migration filled the index")
        #expect(try Self.ids(store, .matching("oslo")) == [1, 3], "case folded")
        #expect(try Self.ids(store, .matching("zoe")) == [1], "diacritics removed: Zoë")
        #expect(try Self.ids(store, .matching("emile")) == [2])
        #expect(try Self.ids(store, .matching("zo*")) == [1, 4], "a prefix")
        #expect(try Self.ids(store, .matching("oslo NOT kim")) == [1])
        #expect(try Self.ids(store, Column("last_name").matches("zo*")) == [4], "one column")
        #expect(try Self.ids(store, .matching("zo*") && Column("age") > 35) == [4], "with other filters")
        #expect(try Self.ids(store, .matching("oslo") || Column("city") == "Bergen") == [1, 3, 4])
        // The query language, and the typed API.
        #expect(try store.objects(Person.self).filter("MATCH 'oslo' AND age < 30").fetch().map(\.firstName) == ["Ana"])
        #expect(try store.objects(Person.self).filter("last_name MATCH $0", "durand").fetch().map(\.firstName) == ["Émile"])
        #expect(try store.objects(Person.self).filter("NOT city MATCH 'oslo'").fetchCount() == 3)
        #expect(try store.objects(Person.self).matching("oslo").sorted(by: \.firstName).fetch().map(\.firstName) == ["Ana", "Zoë"])
        #expect(try store.objects(Person.self).where { $0.firstName.matches("ana") }.fetch().map(\.lastName) == ["Kim"])
        // What the plain connection finds with the same FTS5 query.
        #expect(try plain.rows("SELECT rowid FROM sluice_fts_person WHERE sluice_fts_person MATCH 'zo*' ORDER BY rowid") == [[.integer(1)], [.integer(4)]])
    }

    @Test func tokenizersStemAndFindSubstrings() throws {
        let (porter, _) = try Self.store(.porter())
        try porter.write { tx in try tx.execute(sql: "INSERT INTO person (first_name, last_name, city) VALUES ('Running', 'Man', 'Leeds')") }
        #expect(try Self.ids(porter, .matching("run")) == [6], "porter: running → run")
        let (trigram, _) = try Self.store(.trigram())
        #expect(try Self.ids(trigram, .matching("小龙")) == [], "a trigram term needs three characters")
        #expect(try Self.ids(trigram, .matching("北京市")) == [5], "CJK text without spaces")
        #expect(try Self.ids(trigram, .matching("ell")) == [4], "a substring: Zoellner")
        #expect(try Self.ids(trigram, .matching("OSL")) == [1, 3], "case-insensitive")
    }

    /// Every writer keeps the index in step: this store, another connection,
    /// the sqlite3 shell; inserts, updates of text and of the rowid, deletes,
    /// REPLACE on the primary key and on another unique key, UPSERT.
    @Test func everyWriterKeepsTheIndexInStep() throws {
        let (store, plain) = try Self.store()
        try store.write { tx in
            try tx.execute(sql: "UPDATE person SET city = 'Trondheim' WHERE id = 3")
            try tx.execute(sql: "UPDATE person SET id = 30 WHERE id = 4")
            try tx.execute(sql: "UPDATE person SET age = 41 WHERE id = 30")    // no indexed column: the trigger stays quiet
        }
        try Self.expectInStep(plain, "own writes")
        #expect(try Self.ids(store, .matching("oslo")) == [1])
        #expect(try Self.ids(store, .matching("zoellner")) == [30], "the rowid moved with the row")
        try plain.execute("INSERT INTO person (id, first_name, last_name, city, email) VALUES (7, 'Kari', 'Nord', 'Oslo', 'k@x')")
        try plain.execute("REPLACE INTO person (id, first_name, last_name, city) VALUES (1, 'Zed', 'Ng', 'Bergen')")
        try Self.expectInStep(plain, "another connection, REPLACE on the primary key")
        #expect(try Self.ids(store, .matching("zoe")) == [], "the replaced row's text is gone")
        try SQLiteShell.run(path: store.path, """
            DELETE FROM person WHERE id = 2;
            INSERT INTO person (first_name, last_name, city, email) VALUES ('Ola', 'Vik', 'Oslo', 'o@x')
                ON CONFLICT (email) DO UPDATE SET city = 'Tromsø';
            INSERT INTO person (first_name, last_name, city, email) VALUES ('Kari', 'Sør', 'Molde', 'k@x')
                ON CONFLICT (email) DO UPDATE SET city = excluded.city;
            """)
        try Self.expectInStep(plain, "the shell: delete, insert, upsert")
        #expect(try Self.ids(store, .matching("molde")) == [7])
        // REPLACE on another unique key deletes row 7 without a delete trigger
        // (the shell's recursive_triggers is off): its entry may stay, but no
        // row matches text it no longer has.
        try SQLiteShell.run(path: store.path, "REPLACE INTO person (first_name, last_name, city, email) VALUES ('Kai', 'Ny', 'Hamar', 'k@x');")
        #expect(try Self.ids(store, .matching("molde")) == [], "the deleted row is not found")
        #expect(try Self.ids(store, .matching("hamar")).count == 1)
        try store.write { tx in try tx.rebuildFullTextIndex(on: "person") }
        try Self.expectInStep(plain, "after a rebuild")
        #expect(throws: StoreError.self) { try store.write { tx in try tx.rebuildFullTextIndex(on: "sluice_log_state") } }
    }

    @Test(arguments: [
        ("MATCH 'zoe AND'", "invalid full-text query", 14),
        ("MATCH 'oslo OR )'", "invalid full-text query", 15),
        ("email MATCH 'x'", "column 'email' is not in the full-text index", 0),
        ("first_name MATCH age", "MATCH needs a text query", 17),
    ])
    func aMalformedFullTextQueryIsAnErrorWithACaret(query: String, message: String, caret: Int) throws {
        let (store, _) = try Self.store()
        do {
            _ = try store.objects(Person.self).filter(query).fetch()
            Issue.record("\(query) was accepted")
        } catch let error as StoreError {
            #expect(error.code == .invalidQuery, "\(query): \(error)")
            #expect(error.message.contains(message), "\(query): \(error.message)")
            #expect(error.message.hasSuffix("\n    " + String(repeating: " ", count: caret) + "^"), "\(query): \(error.message)")
        }
    }

    @Test func aTableWithoutAnIndexSaysHowToMakeOne() throws {
        let store = try TemporaryDatabase().store(migrations: [Self.schema])
        #expect { try Self.ids(store, .matching("x")) } throws: { error in
            (error as? StoreError)?.code == .invalidQuery && "\(error)".contains(".fullTextIndex(version:_:)")
        }
    }

    /// Random query strings (operators, quotes, parentheses, stars, carets,
    /// colons, CJK, emoji, empty) either run or are an `invalidQuery` error:
    /// never a crash, never another error.
    @Test func fuzzedQueriesRunOrAreInvalidQueries() throws {
        let (store, _) = try Self.store()
        let pieces = ["zoe", "oslo", "AND", "OR", "NOT", "NEAR(", ")", "(", "\"", "*", "^", ":", "first_name", "{", "}", "+", "-",
                      "北京", "🙂", "", " ", "'", "é", "NEAR(a b, 2)", "\0", "\\", "city:", "{city last_name}:"]
        var random = SeededRandom(seed: 33)
        for _ in 0..<500 {
            let query = (0..<(random.next(5) + 1)).map { _ in pieces[random.next(pieces.count)] }.joined(separator: random.next(2) == 0 ? " " : "")
            do {
                _ = try Self.ids(store, .matching(query))
            } catch let error as StoreError {
                #expect(error.code == .invalidQuery, "\(query.debugDescription): \(error)")
            }
        }
    }

    /// A live query filtered by a match delivers exact changesets whoever
    /// writes: a row whose text starts to match is inserted, one edited out
    /// of the match is deleted, an edit of matching text is a modification.
    @Test func aLiveMatchFollowsEveryWriterExactly() throws {
        let (store, plain) = try Self.store()
        try store.trackForeignWriters(tables: ["person"])
        let mirror = CommitPathTests.RowMirror(try store.rows(in: "person").filter("MATCH 'oslo'").sorted(byKeyPath: "last_name"))
        let query = "SELECT * FROM person WHERE rowid IN (SELECT rowid FROM sluice_fts_person WHERE sluice_fts_person MATCH 'oslo') ORDER BY last_name, id"
        #expect(mirror.wait(until: try plain.rows(query)))
        _ = mirror.take()
        func step(_ write: () throws -> Void, _ expected: Changes, _ context: Comment) throws {
            try write()
            #expect(mirror.wait(until: try plain.rows(query)), context)
            CommitPathTests.settle(store)
            #expect(ExternalCommitTests.changes(mirror.take().events) == [expected], context)
        }
        // Kim (3, oslo) and Ng (1, Oslo) match.
        try step({ try store.write { tx in try tx.execute(sql: "UPDATE person SET city = 'Oslo' WHERE id = 2") } },
                 Changes(insertions: [0]), "own write: Durand starts to match")
        try step({ try plain.execute("UPDATE person SET city = 'Bergen' WHERE id = 3") },
                 Changes(deletions: [1]), "another connection: Kim is edited out")
        try step({ try SQLiteShell.run(path: store.path, "UPDATE person SET first_name = 'Zoey' WHERE id = 1;") },
                 Changes(modifications: [1]), "the shell: Ng's matching row changes")
        try step({ try SQLiteShell.run(path: store.path, "REPLACE INTO person (id, first_name, last_name, city) VALUES (1, 'Zoe', 'Ng', 'Bodø');") },
                 Changes(deletions: [1]), "the shell: REPLACE takes Ng out")
    }

    enum Writer: Sendable { case own, otherConnection, shell }

    /// A random edit of one of people 1...8: a column set to one of
    /// `words` (SQL literals), an upsert, a deletion or a new rowid.
    static func randomEdit(round: Int, words: [String], firstName: String, _ random: inout SeededRandom) -> String {
        let id = random.next(8) + 1
        let word = words[random.next(words.count)]
        switch random.next(6) {
        case 0: return "UPDATE person SET city = \(word) WHERE id = \(id)"
        case 1: return "UPDATE person SET last_name = coalesce(\(word), 'x') WHERE id = \(id)"
        case 2: return "INSERT OR REPLACE INTO person (id, first_name, last_name, city) VALUES (\(id), 'P\(round)', 'Q', \(word))"
        case 3: return "DELETE FROM person WHERE id = \(id)"
        case 4: return "UPDATE OR IGNORE person SET id = \(random.next(8) + 1) WHERE id = \(id)"
        default: return "UPDATE person SET first_name = \(firstName) WHERE id = \(id)"
        }
    }

    /// Over random text edits (diacritics, CJK, emoji, empty text, NULL
    /// cities, rowid changes, REPLACE, deletes) by every writer, a live match
    /// rebuilt from its changesets equals the same MATCH query re-run on a
    /// plain connection after every commit; with words and with trigrams.
    @Test(arguments: [(Writer.own, FullTextIndex.Tokenizer.unicode61(), UInt64(41)), (.otherConnection, .unicode61(), 42),
                      (.shell, .unicode61(), 43), (.own, .trigram(), 44), (.otherConnection, .trigram(), 45)])
    func aLiveMatchRebuiltFromItsChangesetsEqualsTheQuery(writer: Writer, tokenizer: FullTextIndex.Tokenizer, seed: UInt64) throws {
        let (store, plain) = try Self.store(tokenizer)
        try store.trackForeignWriters(tables: ["person"])
        let term = tokenizer == .trigram() ? "osl" : "oslo"
        let mirror = CommitPathTests.RowMirror(try store.rows(in: "person").filter("MATCH $0 OR last_name MATCH 'ng'", term).sorted(byKeyPath: "first_name"))
        let query = """
            SELECT * FROM person WHERE rowid IN (SELECT rowid FROM sluice_fts_person WHERE sluice_fts_person MATCH '\(term)')
                OR rowid IN (SELECT rowid FROM sluice_fts_person WHERE last_name MATCH 'ng') ORDER BY first_name, id
            """
        #expect(mirror.wait(until: try plain.rows(query)))
        let words = ["'Oslo'", "'oslo sentrum'", "'Ösló'", "'北京市 Oslo'", "'🙂 oslo'", "''", "NULL", "'Bergen'", "'Ng'", "'ng-oslo'", "'Zoë'"]
        var random = SeededRandom(seed: seed)
        for round in 0..<40 {
            let statement = Self.randomEdit(round: round, words: words, firstName: "'F\(round)'", &random)
            try FullTextRankingTests.write(statement, by: writer, store: store, plain: plain)
            #expect(mirror.wait(until: try plain.rows(query)), "\(writer) round \(round): \(statement)")
            try Self.expectInStep(plain, "round \(round)")
        }
        CommitPathTests.settle(store)
        #expect(mirror.take().errors.isEmpty)
    }

    /// Ordering by relevance ranks as FTS5's own `bm25` does on a plain
    /// connection, with column weights; a live ranked search follows every
    /// commit (a re-ranking is a move) and equals the plain ranked query.
    @Test func relevanceRanksAsBM25AndALiveSearchFollowsRankChanges() throws {
        let (store, plain) = try Self.store()
        try store.write { tx in
            try tx.execute(sql: "INSERT INTO person (first_name, last_name, city) VALUES ('Oslo', 'Oslo', 'Oslo'), ('Kari', 'Oslo', 'Hamar')")
        }
        let ranked = "SELECT rowid FROM sluice_fts_person WHERE sluice_fts_person MATCH 'oslo' ORDER BY bm25(sluice_fts_person, 1, 5, 1), rowid"
        let expected = try plain.rows(ranked).compactMap { Int64(sqliteValue: $0[0]) }
        let found = try store.objects(Person.self).searching("oslo", weights: ["last_name": 5]).fetch().compactMap(\.id)
        #expect(found == expected, "weighted: \(found) vs \(expected)")
        #expect(found.first == 6, "three columns of Oslo rank first")
        #expect(try store.objects(Person.self).searching("oslo").fetch().count == 4)
        #expect { try store.objects(Person.self).sorted(by: [.relevance(to: "x", weights: ["email": 2])]).fetch() } throws: { error in
            "\(error)".contains("column 'email' is not in the full-text index")
        }
        // Live: every commit re-ranks; the mirror equals the plain ranked query.
        let (mirror, query) = try FullTextRankingTests.rankedMirror(store, plain)
        for (round, statement) in ["UPDATE person SET first_name = 'Oslo', last_name = 'Oslo' WHERE id = 3",
                                   "UPDATE person SET city = 'Bergen' WHERE id = 6",
                                   "INSERT INTO person (first_name, last_name, city) VALUES ('Oslo', 'Oslo', 'Oslo')",
                                   "DELETE FROM person WHERE id = 1"].enumerated() {
            try plain.execute(statement)
            #expect(mirror.wait(until: try plain.rows(query)), "round \(round): \(statement)")
        }
        CommitPathTests.settle(store)
        let events = mirror.take()
        #expect(events.errors.isEmpty)
        #expect(events.events.contains { !($0.changeset?.moves.isEmpty ?? true) }, "a re-ranking is delivered as a move")
    }

    @Test func highlightAndSnippetMarkTheMatches() throws {
        let (store, _) = try Self.store()
        try store.write { tx in
            try tx.execute(sql: "UPDATE person SET city = 'Gamle Oslo, near the old town of Oslo by the fjord and the harbour' WHERE id = 1")
        }
        try store.read { db in
            #expect(try db.highlight(table: "person", rowID: 1, column: "city", matching: "oslo", open: "<", close: ">")
                    == "Gamle <Oslo>, near the old town of <Oslo> by the fjord and the harbour")
            #expect(try db.highlight(table: "person", rowID: 2, column: "city", matching: "oslo") == nil, "row 2 does not match")
            #expect(try db.highlight(table: "person", rowID: 1, column: "first_name", matching: "zoe") == "[Zoë]", "diacritics kept in the text")
            let snippet = try db.snippet(table: "person", rowID: 1, matching: "fjord", tokens: 4)
            #expect(snippet?.contains("[fjord]") == true && snippet?.contains("…") == true, "\(snippet ?? "nil")")
            #expect { try db.highlight(table: "person", rowID: 1, column: "email", matching: "x") } throws: { "\($0)".contains("not in the full-text index") }
            #expect { try db.snippet(table: "person", rowID: 1, matching: "oslo AND") } throws: { ($0 as? StoreError)?.code == .invalidQuery }
        }
    }

    /// The index is Sluice's own table: the change log holds the rows'
    /// changes and nothing of the index.
    @Test func theIndexIsNeverLogged() throws {
        let (store, _) = try Self.store()
        let start = try store.currentToken
        try store.write { tx in try tx.execute(sql: "UPDATE person SET city = 'Oslo' WHERE id = 2") }
        try store.write { tx in try tx.rebuildFullTextIndex(on: "person") }
        let tables = try store.changes(since: start).flatMap { $0.changes.map(\.table) }
        #expect(tables == ["person"], "\(tables)")
        #expect(!(try store.read { db in try db.tableNames() }).contains("sluice_fts_person"))
    }
}
