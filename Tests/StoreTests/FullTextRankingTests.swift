import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice

/// A live search ranked by relevance (`bm25`): exact changesets for rows
/// that start to match, stop matching and change rank, whoever writes, and
/// over random edits the property "previous + changeset == the ranked query
/// re-run on a plain connection". Commits move every match's score (the
/// index's statistics change); a row left alone that only drifts is never
/// reported as modified.
@Suite(.timeLimit(.minutes(10))) struct FullTextRankingTests {
    typealias Writer = FullTextTests.Writer

    static func write(_ statement: String, by writer: Writer, store: Store, plain: PlainConnection) throws {
        switch writer {
        case .own: try store.write { tx in try tx.execute(sql: statement) }
        case .otherConnection: try plain.execute(statement)
        case .shell: try SQLiteShell.run(path: store.path, statement + ";")
        }
    }

    /// A live search for "oslo" ranked by relevance, mirrored, once it holds
    /// the first result; and the same ranked query for a plain connection.
    static func rankedMirror(_ store: Store, _ plain: PlainConnection) throws -> (CommitPathTests.RowMirror, String) {
        let mirror = CommitPathTests.RowMirror(try store.rows(in: "person").filter("MATCH 'oslo'").sorted(by: [.relevance(to: "oslo")]))
        let query = """
            SELECT p.* FROM person AS p JOIN sluice_fts_person AS f ON f.rowid = p.rowid
            WHERE sluice_fts_person MATCH 'oslo' ORDER BY bm25(sluice_fts_person), p.id
            """
        #expect(mirror.wait(until: try plain.rows(query)))
        _ = mirror.take()
        return (mirror, query)
    }

    /// Each step's exact changeset, by each writer; with the writers'
    /// rows named (`trackForeignWriters`: the rows are re-checked and
    /// every score read again from the index) and without (the search is
    /// re-run and compared): the same changesets.
    @Test(arguments: [(Writer.own, true), (.otherConnection, true), (.shell, true), (.otherConnection, false), (.shell, false)])
    func aRankedSearchDeliversExactChangesets(writer: Writer, named: Bool) throws {
        let (store, plain) = try FullTextTests.store()
        if named { try store.trackForeignWriters(tables: ["person"]) }
        let (mirror, query) = try FullTextRankingTests.rankedMirror(store, plain)
        func step(_ statement: String, _ expected: Changes?, _ context: Comment) throws {
            try Self.write(statement, by: writer, store: store, plain: plain)
            #expect(mirror.wait(until: try plain.rows(query)), context)
            CommitPathTests.settle(store)
            let events = mirror.take()
            #expect(ExternalCommitTests.changes(events.events) == (expected.map { [$0] } ?? []), context)
            #expect(events.errors.isEmpty, context)
        }
        // Ng (1) and Kim (3) match "oslo" once in three words each: the same score, by id.
        try step("UPDATE person SET city = 'Oslo' WHERE id = 2", Changes(insertions: [1]),
                 "Durand starts to match, at its rank (a tie, after Ng by id)")
        try step("UPDATE person SET last_name = 'Oslo' WHERE id = 3", Changes(deletions: [2], insertions: [0], moves: [[2, 0]]),
                 "Kim holds oslo twice: it moves first (a move, not a modification)")
        try step("UPDATE person SET city = 'Bergen fjord' WHERE id = 4", nil,
                 "a row that does not match changes every score (the average length); the order stays: nothing")
        try step("UPDATE person SET city = 'Bergen' WHERE id = 1", Changes(deletions: [1]),
                 "Ng is edited out of the match")
        try step("UPDATE person SET first_name = 'Oslo', last_name = 'Oslo' WHERE id = 2", Changes(deletions: [1], insertions: [0], moves: [[1, 0]]),
                 "Durand now holds oslo three times: it moves first")
        try step("UPDATE person SET age = 99 WHERE id = 2", Changes(modifications: [0]),
                 "a column outside the index: modified in place")
        try step("DELETE FROM person WHERE id = 3", Changes(deletions: [1]), "a deletion")
    }

    /// Over random edits (diacritics, CJK, emoji, empty text, NULL, repeated
    /// words that change rows' lengths and ranks, REPLACE, rowid changes,
    /// deletes) by every writer, a ranked search rebuilt from its changesets
    /// equals the ranked query re-run on a plain connection after every
    /// commit: with two terms and column weights, so that the index's
    /// statistics reorder rows no one edited.
    @Test(arguments: [(Writer.own, FullTextIndex.Tokenizer.unicode61(), UInt64(51)), (.otherConnection, .unicode61(), 52),
                      (.shell, .porter(), 53), (.own, .trigram(), 54), (.otherConnection, .trigram(), 55)])
    func aRankedSearchRebuiltFromItsChangesetsEqualsTheRankedQuery(writer: Writer, tokenizer: FullTextIndex.Tokenizer, seed: UInt64) throws {
        let (store, plain) = try FullTextTests.store(tokenizer)
        if writer != .own { try store.trackForeignWriters(tables: ["person"]) }
        let search = tokenizer == .trigram() ? "osl OR zoe" : "oslo OR ng"
        let mirror = CommitPathTests.RowMirror(try store.rows(in: "person").filter("MATCH $0", search)
            .sorted(by: [.relevance(to: search, weights: ["last_name": 3])]))
        let query = """
            SELECT p.* FROM person AS p JOIN sluice_fts_person AS f ON f.rowid = p.rowid
            WHERE sluice_fts_person MATCH '\(search)' ORDER BY bm25(sluice_fts_person, 1, 3, 1), p.id
            """
        #expect(mirror.wait(until: try plain.rows(query)))
        let words = ["'Oslo'", "'oslo oslo sentrum'", "'Ösló'", "'北京市 Oslo'", "'🙂 oslo'", "''", "NULL", "'Bergen'", "'Ng'",
                     "'ng-oslo ng'", "'Zoë'", "'zoe zoe oslo'", "'a b c d e f g h'"]
        var random = SeededRandom(seed: seed)
        for round in 0..<40 {
            let statement = FullTextTests.randomEdit(round: round, words: words, firstName: "coalesce(\(words[round % words.count]), 'F\(round)')", &random)
            try Self.write(statement, by: writer, store: store, plain: plain)
            #expect(mirror.wait(until: try plain.rows(query)), "\(writer) round \(round): \(statement)")
        }
        CommitPathTests.settle(store)
        #expect(mirror.take().errors.isEmpty)
    }

    /// `BM25` computes FTS5's bm25 from `sluice_bm25_parts` to the bit: the
    /// live search's scores of rows it did not read again are SQLite's.
    @Test(arguments: [FullTextIndex.Tokenizer.unicode61(), .porter(), .trigram()])
    func bm25FromItsPartsIsSQLitesToTheBit(tokenizer: FullTextIndex.Tokenizer) throws {
        let (store, _) = try FullTextTests.store(tokenizer)
        var random = SeededRandom(seed: 77)
        let words = ["oslo", "Ösló", "ng", "zoe", "北京市", "🙂", "sentrum", "bergen", "a", "ng-oslo"]
        try store.write { tx in
            for _ in 0..<200 {
                let text = { (0..<(random.next(6))).map { _ in words[random.next(words.count)] }.joined(separator: " ") }
                try tx.execute(sql: "INSERT INTO person (first_name, last_name, city) VALUES (?, ?, ?)",
                               arguments: [.text(text()), .text(text()), random.next(4) == 0 ? .null : .text(text())])
            }
        }
        for (query, weights) in [("oslo", "1, 1, 1"), ("oslo OR ng", "1, 3, 1"), ("zoe OR sentrum OR bergen", "0.1, 2.5, 7"), ("\"oslo sentrum\"", "")] {
            let search = tokenizer == .trigram() ? query.replacingOccurrences(of: " ng", with: " sen") : query
            let arguments = "sluice_fts_person" + (weights.isEmpty ? "" : ", " + weights)
            let rows = try store.read { db in
                try db.fetchRows(sql: "SELECT sluice_bm25_parts(\(arguments)), bm25(\(arguments)) FROM sluice_fts_person WHERE sluice_fts_person MATCH ?",
                                 arguments: [.text(search)])
            }
            #expect(rows.count > 3, "\(query) matches rows")
            for row in rows {
                guard case .blob(let blob) = row[0], case .real(let expected) = row[1] else {
                    Issue.record("\(query): \(row)")
                    continue
                }
                let parts = blob.withUnsafeBytes { BM25.read($0) }
                guard let (figures, parts) = parts else {
                    Issue.record("\(query): unreadable parts")
                    continue
                }
                #expect(BM25.Scorer(figures).score(parts).bitPattern == expected.bitPattern, "\(query): \(parts) \(figures) → \(expected)")
            }
        }
    }
}
