/// A live query ordered by relevance to a full-text query.
extension QueryPlan {
    /// An ordering by relevance to a full-text query: every commit to the
    /// table moves every match's score (the index's statistics change), so
    /// every score is computed again after each (`LiveQuery.applyRescored`).
    struct Relevance {
        /// The quoted index table and its `bm25` arguments (the index, then the weights).
        let index: String
        let arguments: String
        /// The full-text query, `?1` of the SQL below.
        let query: SQLiteValue
        /// Where the score sits among the sort key's values.
        let termOffset: Int
        /// The key value of a row that does not match.
        let missingScore: Double
        /// Whether every row of the result matches (the filter has the same
        /// full-text query): then the scores read are the rows'.
        let onlyMatches: Bool

        /// Every match's score, by SQLite's bm25.
        var scoresSQL: String { "SELECT rowid, bm25(\(arguments)) FROM \(index) WHERE \(index) MATCH ?1" }
        /// Every match's bm25 parts and score (to check that `BM25` computes it to the bit).
        var allPartsSQL: String {
            "SELECT rowid, sluice_bm25_parts(\(arguments)), bm25(\(arguments)) FROM \(index) WHERE \(index) MATCH ?1"
        }
        /// The bm25 parts of the matches among some rowids (`?2`, a JSON
        /// array), and of the first match (the index's figures come with
        /// any row, computed once per statement).
        var somePartsSQL: String {
            "SELECT rowid, sluice_bm25_parts(\(arguments)) FROM \(index) WHERE \(index) MATCH ?1 AND rowid IN "
                + "(SELECT value FROM json_each(?2) UNION ALL SELECT rowid FROM (SELECT rowid FROM \(index) WHERE \(index) MATCH ?1 LIMIT 1))"
        }
    }
    /// The score of every row that matches the relevance's query, by rowid,
    /// read from the index alone.
    ///
    /// - Complexity: O(m) for m matches; the table is not read.
    func scores(_ db: Database) throws -> [Int64: Double] {
        guard let relevance else { return [:] }
        let statement = try db.cachedStatement(sql: relevance.scoresSQL)
        defer { statement.reset() }
        try statement.bind([relevance.query])
        var scores: [Int64: Double] = [:]
        while try statement.step() { scores[statement.int64(at: 0)] = statement.double(at: 1) }
        return scores
    }

    /// Whether a row's sort values changed by something of its own: any
    /// value but its score, or its score when its content changed too (the
    /// scores of rows left alone drift as the index's statistics change;
    /// that is not theirs, and the rows it reorders are left to move).
    ///
    /// - Parameter extraTerm: whether the keys have a section value first.
    func ownSortValuesChanged(_ old: LiveRowState, _ new: LiveRowState, extraTerm: Bool) -> Bool {
        guard !old.key.hasSameValues(as: new.key) else { return false }
        guard let relevance, old.content == new.content else { return true }
        let skipped = relevance.termOffset + (extraTerm ? 1 : 0)
        let count = orderColumns.count + (extraTerm ? 1 : 0)
        return (0..<count).contains { $0 != skipped && old.key.value(at: $0) != new.key.value(at: $0) }
    }
}
