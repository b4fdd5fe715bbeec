/// A filter on a table's rows: a query string in the style of Realm's and
/// NSPredicate's, or an expression built from `Column`s.
///
/// ```swift
/// let adults = try Filter("age >= $0 AND last_name BEGINSWITH[c] $1", 18, "mü")
/// let same = Column("age") >= 18 && Column("last_name").beginsWith("mü", caseInsensitive: true)
/// ```
///
/// Grammar: `=` `==` `!=` `<>` `<` `<=` `>` `>=`, `AND` `&&`, `OR` `||`,
/// `NOT` `!`, parentheses, `IN (a, b)` or `IN {a, b}`, `BETWEEN a AND b` or
/// `BETWEEN {a, b}`, `LIKE` (`*` and `?` wildcards), `BEGINSWITH`,
/// `ENDSWITH`, `CONTAINS`, each with `[c]` for case-insensitive (Unicode
/// lower-casing), `IS NULL`, `IS NOT NULL`, `== nil`; literals `'text'`,
/// `"text"`, numbers, `true`, `false`, `null`/`nil`; arguments `$0`, `$1`, ...
/// or `?` in turn. Keywords are case-insensitive.
///
/// Columns are checked against the table when the filter runs; values are
/// always bound as parameters, never spliced into SQL.
public struct Filter: Sendable, Hashable {
    /// The syntax tree.
    public let predicate: Predicate
    /// The positional arguments.
    public let arguments: [SQLiteValue]
    /// The query string it was parsed from, for error messages with a caret.
    public let source: String?

    /// Parses a query string with positional arguments.
    ///
    /// - Throws: `StoreError.Code.invalidQuery`, whose message shows the
    ///   position at fault with a caret.
    ///
    /// - Parameters:
    ///   - query: the query (`"age >= $0 AND name BEGINSWITH[c] $1"`).
    ///   - arguments: the values of `$0`, `$1`, ... (bound, never spliced into the SQL).
    public init(_ query: String, _ arguments: any SQLiteValueConvertible...) throws {
        try self.init(query, arguments: arguments.map(\.sqliteValue))
    }

    /// Parses a query string with an array of positional arguments.
    ///
    /// - Parameters:
    ///   - query: the query.
    ///   - arguments: the values of `$0`, `$1`, ...
    /// - Throws: `StoreError.Code.invalidQuery`, whose message shows the
    ///   position at fault with a caret.
    public init(_ query: String, arguments: [SQLiteValue]) throws {
        var parser = QueryParser(query)
        self.predicate = try parser.parse()
        self.arguments = arguments
        self.source = query
        try checkArguments(predicate, count: arguments.count, source: query)
    }

    /// Wraps a predicate built in Swift.
    ///
    /// - Parameter predicate: the predicate.
    public init(_ predicate: Predicate) {
        self.predicate = predicate
        self.arguments = []
        self.source = nil
    }

    /// A filter that keeps every row.
    public static let all = Filter(.constant(true))

    /// Both filters hold.
    ///
    /// - Parameters:
    ///   - lhs: a filter.
    ///   - rhs: another filter.
    /// - Returns: the filter that holds when both hold.
    public static func && (lhs: Filter, rhs: Filter) -> Filter {
        lhs.combined(with: rhs) { .and($0, $1) }
    }

    /// Either filter holds.
    ///
    /// - Parameters:
    ///   - lhs: a filter.
    ///   - rhs: another filter.
    /// - Returns: the filter that holds when either holds.
    public static func || (lhs: Filter, rhs: Filter) -> Filter {
        lhs.combined(with: rhs) { .or($0, $1) }
    }

    /// The filter does not hold.
    public static prefix func ! (filter: Filter) -> Filter {
        Filter(predicate: .not(filter.predicate), arguments: filter.arguments, source: filter.source)
    }

    init(predicate: Predicate, arguments: [SQLiteValue], source: String?) {
        self.predicate = predicate
        self.arguments = arguments
        self.source = source
    }

    private func combined(with other: Filter, _ make: (Predicate, Predicate) -> Predicate) -> Filter {
        // Resolve arguments first, so the two filters' `$0`s stay apart.
        Filter(predicate: make(resolvedPredicate, other.resolvedPredicate), arguments: [], source: nil)
    }

    /// The predicate with arguments replaced by their values.
    var resolvedPredicate: Predicate {
        guard !arguments.isEmpty else { return predicate }
        return predicate.resolvingArguments(arguments)
    }
}

private func checkArguments(_ predicate: Predicate, count: Int, source: String) throws {
    func check(_ operand: Operand) throws {
        if case .argument(let index, let position) = operand, index >= count {
            throw QueryParser.error(
                "argument $\(index) is missing: \(count) argument\(count == 1 ? "" : "s") given",
                in: source, at: position ?? 0)
        }
    }
    try predicate.forEachOperand(check)
}

extension Predicate {
    func forEachOperand(_ body: (Operand) throws -> Void) rethrows {
        switch self {
        case .comparison(let lhs, _, let rhs, _), .string(let lhs, _, let rhs, _):
            try body(lhs); try body(rhs)
        case .isNull(let operand, _):
            try body(operand)
        case .in(let operand, let list, _):
            try body(operand); try list.forEach(body)
        case .between(let operand, let low, let high, _):
            try body(operand); try body(low); try body(high)
        case .and(let lhs, let rhs), .or(let lhs, let rhs):
            try lhs.forEachOperand(body); try rhs.forEachOperand(body)
        case .not(let inner), .quantified(_, let inner):
            try inner.forEachOperand(body)
        case .counted(let inner, _, let value):
            try inner.forEachOperand(body); try body(value)
        case .match(let column, let query, _):
            if let column { try body(column) }
            try body(query)
        case .constant:
            break
        }
    }

    func mapOperands(_ transform: (Operand) -> Operand) -> Predicate {
        switch self {
        case .comparison(let lhs, let op, let rhs, let ci):
            return .comparison(transform(lhs), op, transform(rhs), caseInsensitive: ci)
        case .string(let lhs, let op, let rhs, let ci):
            return .string(transform(lhs), op, transform(rhs), caseInsensitive: ci)
        case .isNull(let operand, let negated):
            return .isNull(transform(operand), negated: negated)
        case .in(let operand, let list, let negated):
            return .in(transform(operand), list.map(transform), negated: negated)
        case .between(let operand, let low, let high, let negated):
            return .between(transform(operand), transform(low), transform(high), negated: negated)
        case .and(let lhs, let rhs):
            return .and(lhs.mapOperands(transform), rhs.mapOperands(transform))
        case .or(let lhs, let rhs):
            return .or(lhs.mapOperands(transform), rhs.mapOperands(transform))
        case .not(let inner):
            return .not(inner.mapOperands(transform))
        case .quantified(let quantifier, let inner):
            return .quantified(quantifier, inner.mapOperands(transform))
        case .counted(let inner, let op, let value):
            return .counted(inner.mapOperands(transform), op, transform(value))
        case .match(let column, let query, let position):
            return .match(column.map(transform), transform(query), position: position)
        case .constant:
            return self
        }
    }

    func resolvingArguments(_ arguments: [SQLiteValue]) -> Predicate {
        mapOperands { operand in
            if case .argument(let index, _) = operand, index < arguments.count {
                return .value(arguments[index])
            }
            return operand
        }
    }

    /// The column names the predicate reads.
    var columnNames: Set<String> {
        var names = Set<String>()
        forEachOperand { if case .column(let name, _) = $0 { names.insert(name) } }
        return names
    }
}
