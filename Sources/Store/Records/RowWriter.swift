/// Writes a model's columns, for models that implement `Model.write(to:)`
/// instead of relying on `Codable` (the `@Table` macro writes one).
///
/// ```swift
/// extension Person {
///     func write(to row: inout RowWriter) throws {
///         try row.write(id, as: "id")
///         try row.write(firstName, as: "first_name")
///         try row.write(age, as: "age")          // Int?: nil writes NULL
///     }
/// }
/// ```
///
/// Write every column the model stores, in the same order each time, and the
/// same columns `init(row:)` reads. Values of `SQLiteValueConvertible` types
/// (numbers, text, `Data`, `Date`, `UUID`, `RawRepresentable` enums) take
/// one column; any other `Encodable` value is stored as JSON text, as with
/// `Codable`.
public struct RowWriter {
    // unowned(unsafe): a writer lives only inside one call of `write(to:)`,
    // while the sink that made it is alive.
    unowned(unsafe) let sink: any ColumnSink

    init(sink: any ColumnSink) {
        self.sink = sink
    }

    /// Writes a text column.
    ///
    /// - Parameters:
    ///   - value: the value.
    ///   - column: the column's name.
    /// - Throws: `StoreError.Code.unknownColumn` when the table has no such column.
    public mutating func write(_ value: String, as column: String) throws { try sink.writeText(value, column) }
    /// Writes a text column, or NULL.
    ///
    /// - Parameters:
    ///   - value: the value.
    ///   - column: the column's name.
    /// - Throws: `StoreError.Code.unknownColumn` when the table has no such column.
    public mutating func write(_ value: String?, as column: String) throws {
        if let value { try sink.writeText(value, column) } else { try sink.writeNull(column) }
    }
    /// Writes an integer column.
    ///
    /// - Parameters:
    ///   - value: the value.
    ///   - column: the column's name.
    /// - Throws: `StoreError.Code.unknownColumn` when the table has no such column.
    public mutating func write(_ value: Int64, as column: String) throws { try sink.writeInt64(value, column) }
    /// Writes an integer column, or NULL.
    ///
    /// - Parameters:
    ///   - value: the value.
    ///   - column: the column's name.
    /// - Throws: `StoreError.Code.unknownColumn` when the table has no such column.
    public mutating func write(_ value: Int64?, as column: String) throws {
        if let value { try sink.writeInt64(value, column) } else { try sink.writeNull(column) }
    }
    /// Writes an integer column.
    ///
    /// - Parameters:
    ///   - value: the value.
    ///   - column: the column's name.
    /// - Throws: `StoreError.Code.unknownColumn` when the table has no such column.
    public mutating func write(_ value: Int, as column: String) throws { try sink.writeInt64(Int64(value), column) }
    /// Writes an integer column, or NULL.
    ///
    /// - Parameters:
    ///   - value: the value.
    ///   - column: the column's name.
    /// - Throws: `StoreError.Code.unknownColumn` when the table has no such column.
    public mutating func write(_ value: Int?, as column: String) throws {
        if let value { try sink.writeInt64(Int64(value), column) } else { try sink.writeNull(column) }
    }
    /// Writes a real column.
    ///
    /// - Parameters:
    ///   - value: the value.
    ///   - column: the column's name.
    /// - Throws: `StoreError.Code.unknownColumn` when the table has no such column.
    public mutating func write(_ value: Double, as column: String) throws { try sink.writeDouble(value, column) }
    /// Writes a real column, or NULL.
    ///
    /// - Parameters:
    ///   - value: the value.
    ///   - column: the column's name.
    /// - Throws: `StoreError.Code.unknownColumn` when the table has no such column.
    public mutating func write(_ value: Double?, as column: String) throws {
        if let value { try sink.writeDouble(value, column) } else { try sink.writeNull(column) }
    }
    /// Writes a boolean as the integer 0 or 1.
    ///
    /// - Parameters:
    ///   - value: the value.
    ///   - column: the column's name.
    /// - Throws: `StoreError.Code.unknownColumn` when the table has no such column.
    public mutating func write(_ value: Bool, as column: String) throws { try sink.writeInt64(value ? 1 : 0, column) }
    /// Writes a boolean as 0 or 1, or NULL.
    ///
    /// - Parameters:
    ///   - value: the value.
    ///   - column: the column's name.
    /// - Throws: `StoreError.Code.unknownColumn` when the table has no such column.
    public mutating func write(_ value: Bool?, as column: String) throws {
        if let value { try sink.writeInt64(value ? 1 : 0, column) } else { try sink.writeNull(column) }
    }
    /// Writes a value of a type that maps to one column.
    ///
    /// - Parameters:
    ///   - value: the value.
    ///   - column: the column's name.
    /// - Throws: `StoreError.Code.unknownColumn` when the table has no such column.
    public mutating func write<T: SQLiteValueConvertible>(_ value: T, as column: String) throws {
        try sink.writeValue(value.sqliteValue, column)
    }
    /// Writes any `Encodable` value: its own column value when it has one,
    /// JSON text otherwise (as `Codable` models store it).
    ///
    /// - Parameters:
    ///   - value: the value.
    ///   - column: the column's name.
    /// - Throws: `StoreError.Code.unknownColumn` when the table has no such column.
    ///   An encoding error when the value cannot be encoded.
    public mutating func write<T: Encodable>(_ value: T, as column: String) throws {
        try sink.writeValue(try StatementEncoder.sqliteValue(of: value), column)
    }
    /// Writes a value that is both (the column value wins).
    ///
    /// - Parameters:
    ///   - value: the value.
    ///   - column: the column's name.
    /// - Throws: `StoreError.Code.unknownColumn` when the table has no such column.
    public mutating func write<T: SQLiteValueConvertible & Encodable>(_ value: T, as column: String) throws {
        try sink.writeValue(value.sqliteValue, column)
    }

    /// Writes the whole model with `Codable`, as `Model.write(to:)` does by default.
    ///
    /// - Parameter model: the model; each of its coding keys is a column.
    /// - Throws: `StoreError.Code.unknownColumn` for a key that is not a column, or an encoding error.
    public mutating func encode<M: Encodable>(_ model: M) throws {
        try sink.encodeAll(model)
    }
}

/// Where a `RowWriter` puts columns: a prepared statement's parameters, or
/// a recorder of keys and values.
protocol ColumnSink: AnyObject {
    func writeNull(_ column: String) throws
    func writeInt64(_ value: Int64, _ column: String) throws
    func writeDouble(_ value: Double, _ column: String) throws
    func writeText(_ value: String, _ column: String) throws
    func writeValue(_ value: SQLiteValue, _ column: String) throws
    /// Encodes a whole value with `Codable` into the sink.
    func encodeAll<M: Encodable>(_ value: M) throws
}
