/// One sort key: a column and a direction. Results are always ordered by the
/// primary key last, so ties come out in a stable order.
public struct Ordering: Sendable, Hashable {
    /// The column's name.
    public let column: String
    /// Whether larger values come first.
    public let descending: Bool
    /// The offset of the column in the order string it was parsed from.
    let position: Int?
    /// The order string it was parsed from, for error messages with a caret.
    let source: String?
    /// For an ordering by relevance: the full-text query and the weights of
    /// the index's columns (`relevance(to:weights:)`); nil for a column.
    let relevance: Relevance?

    /// What an ordering by relevance ranks by.
    struct Relevance: Sendable, Hashable {
        let query: String
        let weights: [String: Double]
    }

    /// Orders by a column.
    ///
    /// - Parameters:
    ///   - column: the column's name.
    ///   - descending: whether larger values come first.
    public init(_ column: String, descending: Bool = false) {
        self.column = column
        self.descending = descending
        self.position = nil
        self.source = nil
        relevance = nil
    }

    init(column: String, descending: Bool, position: Int?, source: String?, relevance: Relevance? = nil) {
        self.column = column
        self.descending = descending
        self.position = position
        self.source = source
        self.relevance = relevance
    }

    /// Orders by relevance to a full-text query, the most relevant first:
    /// FTS5's `bm25`, with a weight per indexed column (1 unless given). The
    /// table needs a `FullTextIndex`; rows that do not match the query come last.
    ///
    /// ```swift
    /// store.objects(Person.self).matching("oslo zo*").sorted(by: [.relevance(to: "oslo zo*", weights: ["last_name": 2])])
    /// ```
    ///
    /// - Parameters:
    ///   - query: the full-text query, in FTS5's syntax.
    ///   - weights: weights of the index's columns by name; a column left out weighs 1.
    /// - Returns: the ordering.
    /// - Complexity: one `bm25` per row read. One row's text changes every
    ///   row's score; a live search filtered by the same query re-checks the
    ///   changed rows and scores the others from what it kept of them (O(m)
    ///   for m matches while their order holds); ordered by relevance
    ///   without that filter, it re-runs and compares (O(n log n)).
    public static func relevance(to query: String, weights: [String: Double] = [:]) -> Ordering {
        Ordering(column: "", descending: false, position: nil, source: nil, relevance: Relevance(query: query, weights: weights))
    }

    /// The same column in the other direction.
    public var reversed: Ordering {
        Ordering(column: column, descending: !descending, position: position, source: source, relevance: relevance)
    }

    /// Parses `"last_name, first_name DESC"`: column names separated by
    /// commas, each optionally followed by `ASC` or `DESC`.
    ///
    /// - Throws: `StoreError.Code.invalidQuery` with a caret at the fault.
    ///
    /// - Parameter text: the orderings, as in an SQL ORDER BY.
    /// - Returns: the orderings, most significant first.
    public static func parse(_ text: String) throws -> [Ordering] {
        var parser = QueryParser(text)
        return try parser.parseOrdering()
    }
}
