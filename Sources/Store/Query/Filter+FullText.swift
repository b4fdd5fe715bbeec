/// Full-text filters: membership in the table's full-text index
/// (`FullTextIndex`), in FTS5's query syntax (`oslo zo*`, `"new york"`,
/// `ana OR bo`, `NEAR(a b, 2)`, `first_name : zo*`).
extension Filter {
    /// The rows whose indexed text matches a full-text query.
    ///
    /// ```swift
    /// let oslo = try store.read { db in try db.fetchAll(Person.self, filter: .matching("oslo zo*")) }
    /// ```
    ///
    /// - Parameter query: the query, in FTS5's syntax; bound as an argument.
    ///   A query FTS5 cannot parse is an `invalidQuery` error when the filter
    ///   is used, naming the problem.
    /// - Returns: the filter; it combines with any other by `&&` and `||`.
    /// - Complexity: one lookup in the index's inverted lists per term, then
    ///   the matching rows by rowid: independent of the table's size for a
    ///   selective query.
    public static func matching(_ query: String) -> Filter {
        Filter(.match(nil, .value(.text(query)), position: nil))
    }
}

extension Column {
    /// The rows whose text in this column matches a full-text query (the
    /// column must be in the table's full-text index).
    ///
    /// - Parameter query: the query, in FTS5's syntax.
    /// - Returns: the filter.
    /// - Complexity: as `Filter.matching(_:)`.
    public func matches(_ query: String) -> Filter {
        Filter(.match(operand, .value(.text(query)), position: nil))
    }
}

extension ModelColumn {
    /// The rows whose text in this property's column matches a full-text
    /// query: `where { $0.lastName.matches("ng*") }`.
    ///
    /// - Parameter query: the query, in FTS5's syntax.
    /// - Returns: the filter.
    /// - Complexity: as `Filter.matching(_:)`.
    public func matches(_ query: String) -> ModelFilter<Root> {
        make { $0.matches(query) }
    }
}

extension Filter {
    /// This filter without a `MATCH query` over the whole index that holds
    /// with the rest (a conjunct at the top), and whether it had one: a
    /// search ordered by relevance to the same query joins the index's
    /// matches once instead of matching twice.
    func removingMatch(_ query: String) -> (rest: Filter?, removed: Bool) {
        func remove(_ predicate: Predicate) -> (Predicate?, Bool) {
            switch predicate {
            case .match(nil, .value(.text(let text)), _) where text == query:
                return (nil, true)
            case .and(let lhs, let rhs):
                let (left, removedLeft) = remove(lhs)
                if removedLeft { return (left.map { .and($0, rhs) } ?? rhs, true) }
                let (right, removedRight) = remove(rhs)
                return (right.map { .and(lhs, $0) } ?? lhs, removedRight)
            default:
                return (predicate, false)
            }
        }
        let (rest, removed) = remove(resolvedPredicate)
        return (rest.map { Filter(predicate: $0, arguments: [], source: source) }, removed)
    }
}
