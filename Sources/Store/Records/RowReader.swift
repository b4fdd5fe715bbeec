import Foundation

/// Reads the current row of a fetch by column name, for models that
/// implement `Model.init(row:)` instead of relying on `Codable`.
///
/// ```swift
/// extension Person {
///     init(row: RowReader) throws {
///         id = try row["id"]
///         firstName = try row["first_name"]
///         age = try row["age"]          // Int?: NULL reads as nil
///     }
/// }
/// ```
///
/// Columns are found by name; when a model reads them in the same order for
/// every row (as the example does), the lookup is a comparison with the
/// name read at the same place in the previous row.
public struct RowReader {
    // Unmanaged: a reader lives only inside one call of `init(row:)`, while
    // the decoder that made it is alive; reference counting here would cost
    // a retain and a release per column.
    @usableFromInline
    let unmanaged: Unmanaged<StatementDecoder>

    init(decoder: StatementDecoder) {
        unmanaged = Unmanaged.passUnretained(decoder)
    }

    /// The value of a column, converted to `T`.
    ///
    /// - Throws: `StoreError.Code.decoding` when the row has no such column,
    ///   or its value cannot be a `T` (text in an `Int`, NULL in a non-optional).
    ///
    /// - Parameter column: the column's name, in any ASCII case.
    public subscript<T: SQLiteValueConvertible>(_ column: String) -> T {
        get throws {
            try unmanaged._withUnsafeGuaranteedRef { try $0.read(T.self, column: column) }
        }
    }

    /// The value of a column of any `Decodable` type: its own column value
    /// when it has one, JSON text otherwise (as `Codable` models store it).
    ///
    /// - Parameter column: the column's name, in any ASCII case.
    public subscript<T: Decodable>(_ column: String) -> T {
        get throws {
            try unmanaged._withUnsafeGuaranteedRef { try $0.readDecodable(T.self, column: column) }
        }
    }

    /// A value of a type that is both (the column value wins).
    ///
    /// - Parameter column: the column's name, in any ASCII case.
    public subscript<T: SQLiteValueConvertible & Decodable>(_ column: String) -> T {
        get throws {
            try unmanaged._withUnsafeGuaranteedRef { try $0.read(T.self, column: column) }
        }
    }

    // Concrete overloads for the common types: non-generic, so reading a
    // column costs no witness-table or metadata lookup.

    /// A text column.
    ///
    /// - Parameter column: the column's name, in any ASCII case.
    public subscript(_ column: String) -> String {
        get throws { try unmanaged._withUnsafeGuaranteedRef { try $0.readString(column) } }
    }
    /// A text column that may be NULL.
    ///
    /// - Parameter column: the column's name, in any ASCII case.
    public subscript(_ column: String) -> String? {
        get throws { try unmanaged._withUnsafeGuaranteedRef { try $0.readOptionalString(column) } }
    }
    /// An integer column.
    ///
    /// - Parameter column: the column's name, in any ASCII case.
    public subscript(_ column: String) -> Int64 {
        get throws { try unmanaged._withUnsafeGuaranteedRef { try $0.readInt64(column) } }
    }
    /// An integer column that may be NULL.
    ///
    /// - Parameter column: the column's name, in any ASCII case.
    public subscript(_ column: String) -> Int64? {
        get throws { try unmanaged._withUnsafeGuaranteedRef { try $0.readOptionalInt64(column) } }
    }
    /// An integer column.
    ///
    /// - Parameter column: the column's name, in any ASCII case.
    public subscript(_ column: String) -> Int {
        get throws { Int(try unmanaged._withUnsafeGuaranteedRef { try $0.readInt64(column, reporting: Int.self) }) }
    }
    /// An integer column that may be NULL.
    ///
    /// - Parameter column: the column's name, in any ASCII case.
    public subscript(_ column: String) -> Int? {
        get throws { try unmanaged._withUnsafeGuaranteedRef { try $0.readOptionalInt64(column, reporting: Int.self) }.map { Int($0) } }
    }
    /// A real column (integers are converted).
    ///
    /// - Parameter column: the column's name, in any ASCII case.
    public subscript(_ column: String) -> Double {
        get throws { try unmanaged._withUnsafeGuaranteedRef { try $0.readDouble(column) } }
    }
    /// A real column that may be NULL.
    ///
    /// - Parameter column: the column's name, in any ASCII case.
    public subscript(_ column: String) -> Double? {
        get throws { try unmanaged._withUnsafeGuaranteedRef { try $0.readOptionalDouble(column) } }
    }

    /// The raw value of a column, or nil when the row has no such column.
    ///
    /// - Parameter column: the column's name, in any ASCII case.
    /// - Returns: the value as stored, or nil.
    public func value(_ column: String) -> SQLiteValue? {
        unmanaged._withUnsafeGuaranteedRef { decoder in
            decoder.map.index(of: column).map { decoder.value(at: $0) }
        }
    }

    /// Decodes the whole row with `Codable`, as `Model.init(row:)` does by default.
    ///
    /// Inlinable, so a model's `init(from:)` is called directly, not through
    /// a generic copy of the model (the fetch benchmark measured it).
    ///
    /// - Parameter type: the type to decode; its coding keys are column names.
    /// - Returns: the decoded value.
    /// - Throws: `StoreError.Code.decoding`, naming the column and the value that does not fit.
    @inlinable
    public func decode<M: Decodable>(_ type: M.Type) throws -> M {
        try unmanaged._withUnsafeGuaranteedRef { try M(from: $0) }
    }
}

// RowReader's front end on the typed-read core of `StatementDecoder` (the
// one the Codable container uses): the same conversions, the same messages,
// as `StoreError`s naming the table.
extension StatementDecoder {
    /// The column's index. `type` is only for the error message, and lazy:
    /// naming a type like `String?` costs a metadata lookup per column.
    @inline(__always)
    private func index(of column: String, for type: @autoclosure () -> Any.Type) throws -> Int32 {
        guard let index = map.index(of: column) else {
            throw StoreError(code: .decoding, message: "cannot decode \(type()) from table \(tableName): no column '\(column)' in the row (columns: \(columnNames.joined(separator: ", ")))")
        }
        return index
    }

    private func readFailure(_ type: Any.Type, column: String, at index: Int32) -> StoreError {
        StoreError(code: .decoding, message: "cannot decode from table \(tableName): \(problem(type, column: column, at: index))")
    }

    func readString(_ column: String) throws -> String {
        let index = try index(of: column, for: String.self)
        guard let text = optionalText(at: index) else { throw readFailure(String.self, column: column, at: index) }
        return text
    }

    func readOptionalString(_ column: String) throws -> String? {
        optionalText(at: try index(of: column, for: String?.self))
    }

    func readInt64(_ column: String, reporting type: @autoclosure () -> Any.Type = Int64.self) throws -> Int64 {
        let index = try index(of: column, for: type())
        do throws(Mismatch) {
            if let value = try int64(at: index) { return value }
        } catch {}
        throw readFailure(type(), column: column, at: index)
    }

    func readOptionalInt64(_ column: String, reporting type: @autoclosure () -> Any.Type = Int64.self) throws -> Int64? {
        let index = try index(of: column, for: type())
        do throws(Mismatch) { return try int64(at: index) } catch { throw readFailure(type(), column: column, at: index) }
    }

    func readDouble(_ column: String) throws -> Double {
        let index = try index(of: column, for: Double.self)
        do throws(Mismatch) {
            if let value = try double(at: index) { return value }
        } catch {}
        throw readFailure(Double.self, column: column, at: index)
    }

    func readOptionalDouble(_ column: String) throws -> Double? {
        let index = try index(of: column, for: Double?.self)
        do throws(Mismatch) { return try double(at: index) } catch { throw readFailure(Double.self, column: column, at: index) }
    }

    func readDecodable<T: Decodable>(_ type: T.Type, column: String) throws -> T {
        let index = try index(of: column, for: T.self)
        do {
            return try StatementDecoder.decodeValue(T.self, from: value(at: index), key: JSONKey(stringValue: column))
        } catch let error as DecodingError {
            throw StoreError(code: .decoding, message: "cannot decode from table \(tableName): \(StatementDecoder.describe(error))")
        }
    }

    func read<T: SQLiteValueConvertible>(_ type: T.Type, column: String) throws -> T {
        let index = try index(of: column, for: T.self)
        guard let converted = T(sqliteValue: value(at: index)) else { throw readFailure(T.self, column: column, at: index) }
        return converted
    }
}
