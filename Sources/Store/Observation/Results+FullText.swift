extension Results {
    /// Keeps the rows whose indexed text matches a full-text query, combined
    /// with any filter already set by AND: a search field's results.
    ///
    /// ```swift
    /// let found = store.objects(Person.self).matching("oslo zo*").sorted(by: \.lastName)
    /// ```
    ///
    /// - Parameter query: the query, in FTS5's syntax (the table needs a
    ///   `FullTextIndex`).
    /// - Returns: the narrowed results (a new value).
    /// - Complexity: O(1); observed, a commit re-checks only the rows it
    ///   changed against the index.
    public func matching(_ query: String) -> Results {
        filter(.matching(query))
    }
}

extension Results {
    /// Keeps the rows whose indexed text matches a full-text query, the most
    /// relevant first (then by any order already set): a search field's
    /// ranked results. The same as `matching(query)` sorted by
    /// `Ordering.relevance(to:weights:)`.
    ///
    /// ```swift
    /// let found = store.objects(Person.self).searching("oslo zo*", weights: ["last_name": 2])
    /// ```
    ///
    /// - Parameters:
    ///   - query: the query, in FTS5's syntax.
    ///   - weights: weights of the index's columns by name; a column left out weighs 1.
    /// - Returns: the ranked results (a new value).
    /// - Complexity: reading, one `bm25` per matching row. Observed, a
    ///   commit re-checks the rows it changed, and scores every other match
    ///   from what the search kept of it (one row's text changes every row's
    ///   score): O(m) for m matches while their order holds, O(m log m)
    ///   when the new scores reorder them.
    public func searching(_ query: String, weights: [String: Double] = [:]) -> Results {
        var ranked = matching(query)
        ranked.orderings = [.relevance(to: query, weights: weights)] + orderings
        return ranked
    }
}
