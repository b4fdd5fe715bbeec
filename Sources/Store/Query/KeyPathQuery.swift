import Dispatch

/// A filter on a model's properties, written with key paths:
///
/// ```swift
/// store.objects(Person.self).filter(\.age >= 18 && \.city == "Oslo")
/// store.objects(Person.self).where { $0.age > 18 && $0.lastName.beginsWith("Ø") }   // Realm's shape
/// ```
///
/// Each key path becomes its column (through `Model.columnName(for:)`,
/// which `@Table` derives) and each value a bound parameter: the same SQL
/// as the query string `"age >= $0 AND city == $1"`. A key path that is not
/// a column (a computed property, a model without `@Table`) makes the
/// results fail with an error naming it, as a bad query string does.
public struct ModelFilter<Root: Model>: Sendable {
    /// The filter, or why a key path has no column.
    let filter: Result<Filter, StoreError>

    init(_ filter: Result<Filter, StoreError>) {
        self.filter = filter
    }

    /// Wraps an untyped filter (a query string, `Column`s).
    ///
    /// - Parameter filter: the untyped filter.
    public init(_ filter: Filter) {
        self.filter = .success(filter)
    }

    /// The untyped filter it stands for.
    ///
    /// - Returns: the filter, with each key path as its column.
    /// - Throws: `StoreError` naming a key path that is not a column.
    public func untyped() throws -> Filter {
        try filter.get()
    }

    /// Both hold.
    ///
    /// - Parameters:
    ///   - lhs: a filter.
    ///   - rhs: another filter.
    /// - Returns: the filter that holds when both (`&&`) or either (`||`) hold.
    public static func && (lhs: ModelFilter, rhs: ModelFilter) -> ModelFilter {
        ModelFilter(lhs.filter.flatMap { left in rhs.filter.map { left && $0 } })
    }

    /// Either holds.
    ///
    /// - Parameters:
    ///   - lhs: a filter.
    ///   - rhs: another filter.
    /// - Returns: the filter that holds when both (`&&`) or either (`||`) hold.
    public static func || (lhs: ModelFilter, rhs: ModelFilter) -> ModelFilter {
        ModelFilter(lhs.filter.flatMap { left in rhs.filter.map { left || $0 } })
    }

    /// Does not hold.
    public static prefix func ! (filter: ModelFilter) -> ModelFilter {
        ModelFilter(filter.filter.map { !$0 })
    }
}

/// A model's property in a typed filter: what `$0.age` is inside
/// `where { ... }`, and what a key path becomes in `\.age >= 18`.
public struct ModelColumn<Root: Model, Value>: Sendable {
    /// The column, or why the key path has none.
    let column: Result<Column, StoreError>

    /// The column of a key path.
    ///
    /// - Parameter keyPath: a stored property of the model (its column).
    public init(_ keyPath: KeyPath<Root, Value>) {
        column = Root.column(for: keyPath).map(Column.init)
    }

    /// A column (or relationship path) already resolved.
    init(column: Result<Column, StoreError>) {
        self.column = column
    }

    func make(_ body: (Column) -> Filter) -> ModelFilter<Root> {
        ModelFilter(column.map(body))
    }

    /// Equal (`nil` matches NULL).
    ///
    /// - Parameters:
    ///   - lhs: the column.
    ///   - rhs: the value, bound as an argument.
    /// - Returns: the filter, compared as SQLite compares (the column's collation for text).
    public static func == (lhs: ModelColumn, rhs: Value) -> ModelFilter<Root> where Value: SQLiteValueConvertible {
        lhs.make { $0 == rhs }
    }
    /// Different (NULL differs from any value).
    ///
    /// - Parameters:
    ///   - lhs: the column.
    ///   - rhs: the value, bound as an argument.
    /// - Returns: the filter, compared as SQLite compares (the column's collation for text).
    public static func != (lhs: ModelColumn, rhs: Value) -> ModelFilter<Root> where Value: SQLiteValueConvertible {
        lhs.make { $0 != rhs }
    }
    /// Less than.
    ///
    /// - Parameters:
    ///   - lhs: the column.
    ///   - rhs: the value, bound as an argument.
    /// - Returns: the filter, compared as SQLite compares (the column's collation for text).
    public static func < (lhs: ModelColumn, rhs: Value) -> ModelFilter<Root> where Value: SQLiteValueConvertible {
        lhs.make { $0 < rhs }
    }
    /// At most.
    ///
    /// - Parameters:
    ///   - lhs: the column.
    ///   - rhs: the value, bound as an argument.
    /// - Returns: the filter, compared as SQLite compares (the column's collation for text).
    public static func <= (lhs: ModelColumn, rhs: Value) -> ModelFilter<Root> where Value: SQLiteValueConvertible {
        lhs.make { $0 <= rhs }
    }
    /// Greater than.
    ///
    /// - Parameters:
    ///   - lhs: the column.
    ///   - rhs: the value, bound as an argument.
    /// - Returns: the filter, compared as SQLite compares (the column's collation for text).
    public static func > (lhs: ModelColumn, rhs: Value) -> ModelFilter<Root> where Value: SQLiteValueConvertible {
        lhs.make { $0 > rhs }
    }
    /// At least.
    ///
    /// - Parameters:
    ///   - lhs: the column.
    ///   - rhs: the value, bound as an argument.
    /// - Returns: the filter, compared as SQLite compares (the column's collation for text).
    public static func >= (lhs: ModelColumn, rhs: Value) -> ModelFilter<Root> where Value: SQLiteValueConvertible {
        lhs.make { $0 >= rhs }
    }

    /// One of the values.
    ///
    /// - Parameter values: the values, bound as arguments.
    /// - Returns: the filter (`IN (...)`; false for no values).
    public func `in`(_ values: [Value]) -> ModelFilter<Root> where Value: SQLiteValueConvertible {
        make { $0.in(values) }
    }

    /// Between the bounds, inclusive.
    ///
    /// - Parameters:
    ///   - low: the lower bound.
    ///   - high: the upper bound.
    /// - Returns: the filter (`BETWEEN low AND high`).
    public func between(_ low: Value, _ high: Value) -> ModelFilter<Root> where Value: SQLiteValueConvertible {
        make { $0.between(low, high) }
    }
}

extension ModelColumn where Value: StringProtocol {
    /// The text begins with the prefix.
    ///
    /// - Parameters:
    ///   - prefix: the prefix, bound as an argument (its `%` and `_` match themselves).
    ///   - caseInsensitive: whether ASCII case is ignored (Realm's `[c]`).
    /// - Returns: the filter.
    public func beginsWith(_ prefix: String, caseInsensitive: Bool = false) -> ModelFilter<Root> {
        make { $0.beginsWith(prefix, caseInsensitive: caseInsensitive) }
    }
    /// The text ends with the suffix.
    ///
    /// - Parameters:
    ///   - suffix: the suffix, bound as an argument (its `%` and `_` match themselves).
    ///   - caseInsensitive: whether ASCII case is ignored (Realm's `[c]`).
    /// - Returns: the filter.
    public func endsWith(_ suffix: String, caseInsensitive: Bool = false) -> ModelFilter<Root> {
        make { $0.endsWith(suffix, caseInsensitive: caseInsensitive) }
    }
    /// The text contains the string.
    ///
    /// - Parameters:
    ///   - string: the text to find, bound as an argument (its `%` and `_` match themselves).
    ///   - caseInsensitive: whether ASCII case is ignored (Realm's `[c]`).
    /// - Returns: the filter.
    public func contains(_ string: String, caseInsensitive: Bool = false) -> ModelFilter<Root> {
        make { $0.contains(string, caseInsensitive: caseInsensitive) }
    }
    /// The text matches a Realm-style pattern (`*` any run, `?` one character).
    ///
    /// - Parameters:
    ///   - pattern: the pattern, bound as an argument.
    ///   - caseInsensitive: whether ASCII case is ignored (Realm's `[c]`).
    /// - Returns: the filter.
    public func like(_ pattern: String, caseInsensitive: Bool = false) -> ModelFilter<Root> {
        make { $0.like(pattern, caseInsensitive: caseInsensitive) }
    }
}

extension ModelColumn {
    /// The text begins with the prefix (NULL never does).
    ///
    /// - Parameters:
    ///   - prefix: the prefix, bound as an argument (its `%` and `_` match themselves).
    ///   - caseInsensitive: whether ASCII case is ignored (Realm's `[c]`).
    /// - Returns: the filter.
    public func beginsWith(_ prefix: String, caseInsensitive: Bool = false) -> ModelFilter<Root> where Value == String? {
        make { $0.beginsWith(prefix, caseInsensitive: caseInsensitive) }
    }
    /// The text ends with the suffix (NULL never does).
    ///
    /// - Parameters:
    ///   - suffix: the suffix, bound as an argument (its `%` and `_` match themselves).
    ///   - caseInsensitive: whether ASCII case is ignored (Realm's `[c]`).
    /// - Returns: the filter.
    public func endsWith(_ suffix: String, caseInsensitive: Bool = false) -> ModelFilter<Root> where Value == String? {
        make { $0.endsWith(suffix, caseInsensitive: caseInsensitive) }
    }
    /// The text contains the string (NULL never does).
    ///
    /// - Parameters:
    ///   - string: the text to find, bound as an argument (its `%` and `_` match themselves).
    ///   - caseInsensitive: whether ASCII case is ignored (Realm's `[c]`).
    /// - Returns: the filter.
    public func contains(_ string: String, caseInsensitive: Bool = false) -> ModelFilter<Root> where Value == String? {
        make { $0.contains(string, caseInsensitive: caseInsensitive) }
    }
}

extension ModelColumn where Value == Bool {
    /// A Bool property as a filter: its rows are those where it is true (`$0.isDone`).
    public var isTrue: ModelFilter<Root> { self == true }

    /// The property is false: `where { !$0.isDone }`.
    public static prefix func ! (column: ModelColumn) -> ModelFilter<Root> { column == false }

    /// Both hold: `where { $0.isDone && $0.priority == .high }`.
    ///
    /// - Parameters:
    ///   - lhs: a filter, or a `Bool` column (true when the column is).
    ///   - rhs: a filter, or a `Bool` column.
    /// - Returns: the combined filter.
    public static func && (lhs: ModelColumn, rhs: ModelFilter<Root>) -> ModelFilter<Root> { lhs.isTrue && rhs }
    /// Both hold.
    ///
    /// - Parameters:
    ///   - lhs: a filter, or a `Bool` column (true when the column is).
    ///   - rhs: a filter, or a `Bool` column.
    /// - Returns: the combined filter.
    public static func && (lhs: ModelFilter<Root>, rhs: ModelColumn) -> ModelFilter<Root> { lhs && rhs.isTrue }
    /// Both hold.
    ///
    /// - Parameters:
    ///   - lhs: a filter, or a `Bool` column (true when the column is).
    ///   - rhs: a filter, or a `Bool` column.
    /// - Returns: the combined filter.
    public static func && (lhs: ModelColumn, rhs: ModelColumn) -> ModelFilter<Root> { lhs.isTrue && rhs.isTrue }
    /// Either holds.
    ///
    /// - Parameters:
    ///   - lhs: a filter, or a `Bool` column (true when the column is).
    ///   - rhs: a filter, or a `Bool` column.
    /// - Returns: the combined filter.
    public static func || (lhs: ModelColumn, rhs: ModelFilter<Root>) -> ModelFilter<Root> { lhs.isTrue || rhs }
    /// Either holds.
    ///
    /// - Parameters:
    ///   - lhs: a filter, or a `Bool` column (true when the column is).
    ///   - rhs: a filter, or a `Bool` column.
    /// - Returns: the combined filter.
    public static func || (lhs: ModelFilter<Root>, rhs: ModelColumn) -> ModelFilter<Root> { lhs || rhs.isTrue }
    /// Either holds.
    ///
    /// - Parameters:
    ///   - lhs: a filter, or a `Bool` column (true when the column is).
    ///   - rhs: a filter, or a `Bool` column.
    /// - Returns: the combined filter.
    public static func || (lhs: ModelColumn, rhs: ModelColumn) -> ModelFilter<Root> { lhs.isTrue || rhs.isTrue }
}

/// The model's properties inside `where { ... }`: `$0.age` is the `age` column.
@dynamicMemberLookup
public struct ModelQuery<Root: Model>: Sendable {
    /// A property of the model.
    ///
    /// - Parameter keyPath: a stored property of the model.
    /// - Returns: its column, to compare.
    public subscript<Value>(dynamicMember keyPath: KeyPath<Root, Value>) -> ModelColumn<Root, Value> {
        ModelColumn(keyPath)
    }
}

// MARK: - Key paths as columns

/// `\.age == 18`: the property equals the value.
///
/// - Parameters:
///   - lhs: the model's property, a column.
///   - rhs: the value, bound as an argument.
/// - Returns: the filter, compared as SQLite compares (the column's collation for text).
public func == <Root: Model, Value: SQLiteValueConvertible>(lhs: KeyPath<Root, Value>, rhs: Value) -> ModelFilter<Root> {
    ModelColumn(lhs) == rhs
}
/// `\.age != 18`: the property differs from the value.
///
/// - Parameters:
///   - lhs: the model's property, a column.
///   - rhs: the value, bound as an argument.
/// - Returns: the filter, compared as SQLite compares (the column's collation for text).
public func != <Root: Model, Value: SQLiteValueConvertible>(lhs: KeyPath<Root, Value>, rhs: Value) -> ModelFilter<Root> {
    ModelColumn(lhs) != rhs
}
/// `\.age < 18`.
///
/// - Parameters:
///   - lhs: the model's property, a column.
///   - rhs: the value, bound as an argument.
/// - Returns: the filter, compared as SQLite compares (the column's collation for text).
public func < <Root: Model, Value: SQLiteValueConvertible>(lhs: KeyPath<Root, Value>, rhs: Value) -> ModelFilter<Root> {
    ModelColumn(lhs) < rhs
}
/// `\.age <= 18`.
///
/// - Parameters:
///   - lhs: the model's property, a column.
///   - rhs: the value, bound as an argument.
/// - Returns: the filter, compared as SQLite compares (the column's collation for text).
public func <= <Root: Model, Value: SQLiteValueConvertible>(lhs: KeyPath<Root, Value>, rhs: Value) -> ModelFilter<Root> {
    ModelColumn(lhs) <= rhs
}
/// `\.age > 18`.
///
/// - Parameters:
///   - lhs: the model's property, a column.
///   - rhs: the value, bound as an argument.
/// - Returns: the filter, compared as SQLite compares (the column's collation for text).
public func > <Root: Model, Value: SQLiteValueConvertible>(lhs: KeyPath<Root, Value>, rhs: Value) -> ModelFilter<Root> {
    ModelColumn(lhs) > rhs
}
/// `\.age >= 18`.
///
/// - Parameters:
///   - lhs: the model's property, a column.
///   - rhs: the value, bound as an argument.
/// - Returns: the filter, compared as SQLite compares (the column's collation for text).
public func >= <Root: Model, Value: SQLiteValueConvertible>(lhs: KeyPath<Root, Value>, rhs: Value) -> ModelFilter<Root> {
    ModelColumn(lhs) >= rhs
}

/// `!\.isDone`: the Bool property is false.
public prefix func ! <Root: Model>(keyPath: KeyPath<Root, Bool>) -> ModelFilter<Root> {
    ModelColumn(keyPath) == false
}

extension Model {
    /// The column of a key path, or an error naming the key path.
    static func column(for keyPath: PartialKeyPath<Self>) -> Result<String, StoreError> {
        guard let name = columnName(for: keyPath) else {
            return .failure(StoreError(code: .unknownColumn, message: "\(keyPath) is not a column of \(Self.self): key paths need stored properties of a @Table model (or its columnName(for:))"))
        }
        return .success(name)
    }

    /// The columns of key paths, or an error naming the first that has none.
    static func columns(for keyPaths: [PartialKeyPath<Self>]) -> Result<[String], StoreError> {
        var names: [String] = []
        for keyPath in keyPaths {
            switch column(for: keyPath) {
            case .success(let name): names.append(name)
            case .failure(let error): return .failure(error)
            }
        }
        return .success(names)
    }
}
