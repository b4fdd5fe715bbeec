/// A row of any query: column names and their values, in the query's order.
///
/// Rows are what tools and the CLI work with; apps usually fetch typed models.
///
/// ```swift
/// let rows = try store.read { db in try db.fetchRows(sql: "SELECT * FROM person") }
/// let name = rows[0]["first_name"]   // SQLiteValue?
/// ```
public struct Row: Sendable, Hashable {
    /// The column names, in order.
    public let columns: [String]
    /// The values, one per column.
    public private(set) var values: [SQLiteValue]

    /// Creates a row; `columns` and `values` must have the same count.
    ///
    /// - Parameters:
    ///   - columns: the column names, in order.
    ///   - values: the values, in the same order.
    public init(columns: [String], values: [SQLiteValue]) {
        precondition(columns.count == values.count, "a row needs one value per column")
        self.columns = columns
        self.values = values
    }

    /// Creates a row from column/value pairs, in order.
    ///
    /// - Parameter pairs: each column's name and value, in order.
    public init(_ pairs: KeyValuePairs<String, SQLiteValue>) {
        self.init(columns: pairs.map(\.key), values: pairs.map(\.value))
    }

    /// The number of columns.
    public var count: Int { values.count }

    /// The value of a column by position.
    ///
    /// - Parameter index: the column's position, from 0.
    public subscript(index: Int) -> SQLiteValue { values[index] }

    /// The value of a column by name, or nil when the row has no such column.
    /// Names match exactly first, then ignoring ASCII case, as SQLite does.
    ///
    /// - Parameter column: the column's name.
    public subscript(column: String) -> SQLiteValue? {
        guard let index = index(ofColumn: column) else { return nil }
        return values[index]
    }

    /// The position of a column by name (exact, then ASCII case-insensitive).
    ///
    /// - Parameter column: the column's name.
    /// - Returns: its position, or nil when the row has no such column.
    public func index(ofColumn column: String) -> Int? {
        if let index = columns.firstIndex(of: column) { return index }
        let lowered = column.lowercased()
        return columns.firstIndex { $0.lowercased() == lowered }
    }

    /// The value of a column converted to a Swift type.
    ///
    /// - Throws: `StoreError.Code.unknownColumn` when the column is missing,
    ///   `.typeMismatch` when the stored value cannot be converted.
    ///
    /// - Parameters:
    ///   - column: the column's name.
    ///   - type: the Swift type to convert to.
    /// - Returns: the converted value.
    public func value<T: SQLiteValueConvertible>(_ column: String, as type: T.Type = T.self) throws -> T {
        guard let value = self[column] else {
            throw StoreError(code: .unknownColumn, message: "row has no column '\(column)' (columns: \(columns.joined(separator: ", ")))")
        }
        guard let converted = T(sqliteValue: value) else {
            throw StoreError(code: .typeMismatch, message: "column '\(column)' holds \(value.typeName), which is not a \(T.self)")
        }
        return converted
    }
}
