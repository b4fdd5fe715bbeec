/// A column, for building filters in Swift with typed values.
///
/// ```swift
/// let filter = Column("age") > 30 && Column("city").in(["Oslo", "Bergen"])
/// ```
public struct Column: Sendable, Hashable {
    /// The column's name.
    public let name: String

    /// Names a column of the queried table.
    ///
    /// - Parameter name: the column's name, in any case.
    public init(_ name: String) { self.name = name }

    var operand: Operand { .column(name, position: nil) }

    private func compare(_ op: ComparisonOperator, _ value: some SQLiteValueConvertible) -> Filter {
        Filter(.comparison(operand, op, .value(value.sqliteValue), caseInsensitive: false))
    }

    /// The column equals the value (`IS`: a nil value matches NULL).
    ///
    /// - Parameters:
    ///   - column: the column.
    ///   - value: the value, bound as an argument.
    /// - Returns: the filter, compared as SQLite compares (the column's collation for text).
    public static func == (column: Column, value: some SQLiteValueConvertible) -> Filter { column.compare(.equal, value) }
    /// The column differs from the value (NULL differs from any value).
    ///
    /// - Parameters:
    ///   - column: the column.
    ///   - value: the value, bound as an argument.
    /// - Returns: the filter, compared as SQLite compares (the column's collation for text).
    public static func != (column: Column, value: some SQLiteValueConvertible) -> Filter { column.compare(.notEqual, value) }
    /// The column is less than the value.
    ///
    /// - Parameters:
    ///   - column: the column.
    ///   - value: the value, bound as an argument.
    /// - Returns: the filter, compared as SQLite compares (the column's collation for text).
    public static func < (column: Column, value: some SQLiteValueConvertible) -> Filter { column.compare(.less, value) }
    /// The column is at most the value.
    ///
    /// - Parameters:
    ///   - column: the column.
    ///   - value: the value, bound as an argument.
    /// - Returns: the filter, compared as SQLite compares (the column's collation for text).
    public static func <= (column: Column, value: some SQLiteValueConvertible) -> Filter { column.compare(.lessOrEqual, value) }
    /// The column is greater than the value.
    ///
    /// - Parameters:
    ///   - column: the column.
    ///   - value: the value, bound as an argument.
    /// - Returns: the filter, compared as SQLite compares (the column's collation for text).
    public static func > (column: Column, value: some SQLiteValueConvertible) -> Filter { column.compare(.greater, value) }
    /// The column is at least the value.
    ///
    /// - Parameters:
    ///   - column: the column.
    ///   - value: the value, bound as an argument.
    /// - Returns: the filter, compared as SQLite compares (the column's collation for text).
    public static func >= (column: Column, value: some SQLiteValueConvertible) -> Filter { column.compare(.greaterOrEqual, value) }

    /// The column equals one of the values.
    ///
    /// - Parameter values: the values, bound as arguments.
    /// - Returns: the filter (`IN (...)`; false for no values).
    public func `in`(_ values: [some SQLiteValueConvertible]) -> Filter {
        Filter(.in(operand, values.map { .value($0.sqliteValue) }, negated: false))
    }

    /// The column lies between the bounds, inclusive.
    ///
    /// - Parameters:
    ///   - low: the lower bound.
    ///   - high: the upper bound.
    /// - Returns: the filter (`BETWEEN low AND high`).
    public func between(_ low: some SQLiteValueConvertible, _ high: some SQLiteValueConvertible) -> Filter {
        Filter(.between(operand, .value(low.sqliteValue), .value(high.sqliteValue), negated: false))
    }

    /// The column is NULL.
    public var isNull: Filter { Filter(.isNull(operand, negated: false)) }

    /// The column is not NULL.
    public var isNotNull: Filter { Filter(.isNull(operand, negated: true)) }

    /// The column's text begins with the prefix.
    ///
    /// - Parameters:
    ///   - prefix: the prefix, bound as an argument (its `%` and `_` match themselves).
    ///   - caseInsensitive: whether ASCII case is ignored (Realm's `[c]`).
    /// - Returns: the filter.
    public func beginsWith(_ prefix: String, caseInsensitive: Bool = false) -> Filter {
        Filter(.string(operand, .beginsWith, .value(.text(prefix)), caseInsensitive: caseInsensitive))
    }

    /// The column's text ends with the suffix.
    ///
    /// - Parameters:
    ///   - suffix: the suffix, bound as an argument (its `%` and `_` match themselves).
    ///   - caseInsensitive: whether ASCII case is ignored (Realm's `[c]`).
    /// - Returns: the filter.
    public func endsWith(_ suffix: String, caseInsensitive: Bool = false) -> Filter {
        Filter(.string(operand, .endsWith, .value(.text(suffix)), caseInsensitive: caseInsensitive))
    }

    /// The column's text contains the string.
    ///
    /// - Parameters:
    ///   - string: the text to find, bound as an argument (its `%` and `_` match themselves).
    ///   - caseInsensitive: whether ASCII case is ignored (Realm's `[c]`).
    /// - Returns: the filter.
    public func contains(_ string: String, caseInsensitive: Bool = false) -> Filter {
        Filter(.string(operand, .contains, .value(.text(string)), caseInsensitive: caseInsensitive))
    }

    /// The column's text matches a Realm-style pattern (`*` any run, `?` one character).
    ///
    /// - Parameters:
    ///   - pattern: the pattern, bound as an argument.
    ///   - caseInsensitive: whether ASCII case is ignored (Realm's `[c]`).
    /// - Returns: the filter.
    public func like(_ pattern: String, caseInsensitive: Bool = false) -> Filter {
        Filter(.string(operand, .like, .value(.text(pattern)), caseInsensitive: caseInsensitive))
    }

    /// Ascending order on this column.
    public var ascending: Ordering { Ordering(name) }
    /// Descending order on this column.
    public var descending: Ordering { Ordering(name, descending: true) }
}
