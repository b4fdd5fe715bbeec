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
    }

    init(column: String, descending: Bool, position: Int?, source: String?) {
        self.column = column
        self.descending = descending
        self.position = position
        self.source = source
    }

    /// The same column in the other direction.
    public var reversed: Ordering {
        Ordering(column: column, descending: !descending, position: position, source: source)
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
