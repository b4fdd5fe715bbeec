import CSQLite
import Foundation

/// Decodes a model straight from a statement's current row: each coding key
/// reads the column of that name. No intermediate dictionary, no JSON.
final class StatementDecoder: Decoder {
    let statement: SQLiteStatement
    var map: ColumnMap
    let columnNames: [String]
    let tableName: String
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(statement: Statement, tableName: String) {
        self.statement = statement.handle
        self.columnNames = statement.columnNames
        self.map = ColumnMap(names: statement.columnNames)
        self.tableName = tableName
    }

    /// Decodes the current row.
    func decode<M: Decodable>(_ type: M.Type) throws -> M {
        map.startValue()
        do {
            return try M(from: self)
        } catch let error as DecodingError {
            throw StoreError(code: .decoding, message: "cannot decode \(M.self) from table \(tableName): \(Self.describe(error))")
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Container(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw StoreError(code: .invalidUse, message: "a model decodes from a keyed container of columns, not an unkeyed one")
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw StoreError(code: .invalidUse, message: "a model decodes from a keyed container of columns, not a single value")
    }

    static func describe(_ error: DecodingError) -> String {
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context),
             .keyNotFound(_, let context), .dataCorrupted(let context):
            return context.debugDescription
        @unknown default:
            return "\(error)"
        }
    }

    // MARK: - Reading columns

    @inline(__always)
    fileprivate func column(_ key: some CodingKey) throws -> Int32 {
        guard let index = map.index(of: key.stringValue) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: [key], debugDescription: "no column '\(key.stringValue)' in the row (columns: \(columnNames.joined(separator: ", ")))"))
        }
        return index
    }

    /// The column for a key, or nil when the row has no such column.
    @inline(__always)
    fileprivate func optionalColumn(_ key: some CodingKey) -> Int32? {
        map.index(of: key.stringValue)
    }

    @inline(__always)
    fileprivate func type(at index: Int32) -> Int32 { sqlite3_column_type(statement, index) }

    fileprivate func value(at index: Int32) -> SQLiteValue {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(statement, index))
        case SQLITE_TEXT: return .text(text(at: index))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, index))
            guard count > 0, let pointer = sqlite3_column_blob(statement, index) else { return .blob(Data()) }
            return .blob(Data(bytes: pointer, count: count))
        default: return .null
        }
    }

    @inline(__always)
    fileprivate func text(at index: Int32) -> String {
        guard let pointer = sqlite3_column_text(statement, index) else { return "" }
        let count = Int(sqlite3_column_bytes(statement, index))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    fileprivate func mismatch<T>(_ type: T.Type, _ key: some CodingKey, _ index: Int32) -> DecodingError {
        let found = value(at: index)
        if found.isNull {
            return .valueNotFound(type, .init(codingPath: [key], debugDescription: "column '\(key.stringValue)' is NULL but \(T.self) is not optional"))
        }
        return .typeMismatch(type, .init(codingPath: [key], debugDescription: "column '\(key.stringValue)' holds \(found.typeName), which is not a \(T.self)"))
    }

    /// Decodes any Decodable from a stored value: SQLiteValueConvertible
    /// types directly, single-value types (enums) through their raw value,
    /// anything else from JSON text.
    static func decodeValue<T: Decodable>(_ type: T.Type, from value: SQLiteValue, key: some CodingKey) throws -> T {
        if let convertible = T.self as? any SQLiteValueConvertible.Type {
            guard let decoded = convertible.init(sqliteValue: value) as? T else {
                if value.isNull {
                    throw DecodingError.valueNotFound(type, .init(codingPath: [key], debugDescription: "column '\(key.stringValue)' is NULL but \(T.self) is not optional"))
                }
                throw DecodingError.typeMismatch(type, .init(codingPath: [key], debugDescription: "column '\(key.stringValue)' holds \(value.typeName), which is not a \(T.self)"))
            }
            return decoded
        }
        do {
            return try T(from: SingleValueReader(value: value, key: key))
        } catch is NeedsJSON {
            guard case .text(let json) = value else {
                throw DecodingError.typeMismatch(type, .init(codingPath: [key], debugDescription: "column '\(key.stringValue)' holds \(value.typeName), expected JSON text for \(T.self)"))
            }
            do {
                return try JSONDecoder().decode(T.self, from: Data(json.utf8))
            } catch {
                throw DecodingError.dataCorrupted(.init(codingPath: [key], debugDescription: "column '\(key.stringValue)' does not hold valid JSON for \(T.self)"))
            }
        }
    }

    private struct Container<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: StatementDecoder
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { decoder.columnNames.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool { decoder.map.contains(key.stringValue) }

        func decodeNil(forKey key: Key) throws -> Bool {
            decoder.type(at: try decoder.column(key)) == SQLITE_NULL
        }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
            try decode(Int64.self, forKey: key) != 0
        }
        func decode(_ type: String.Type, forKey key: Key) throws -> String {
            let index = try decoder.column(key)
            guard decoder.type(at: index) == SQLITE_TEXT else { throw decoder.mismatch(type, key, index) }
            return decoder.text(at: index)
        }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
            let index = try decoder.column(key)
            switch decoder.type(at: index) {
            case SQLITE_FLOAT, SQLITE_INTEGER: return sqlite3_column_double(decoder.statement, index)
            default: throw decoder.mismatch(type, key, index)
            }
        }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
            Float(try decode(Double.self, forKey: key))
        }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
            let index = try decoder.column(key)
            switch decoder.type(at: index) {
            case SQLITE_INTEGER: return sqlite3_column_int64(decoder.statement, index)
            case SQLITE_FLOAT:
                guard let exact = Int64(exactly: sqlite3_column_double(decoder.statement, index)) else { throw decoder.mismatch(type, key, index) }
                return exact
            default: throw decoder.mismatch(type, key, index)
            }
        }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(key) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(key) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(key) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(key) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(key) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(key) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(key) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(key) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(key) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            let index = try decoder.column(key)
            return try StatementDecoder.decodeValue(type, from: decoder.value(at: index), key: key)
        }

        private func integer<T: FixedWidthInteger>(_ key: Key) throws -> T {
            let value = try decode(Int64.self, forKey: key)
            guard let exact = T(exactly: value) else {
                throw DecodingError.typeMismatch(T.self, .init(codingPath: [key], debugDescription: "column '\(key.stringValue)' holds \(value), which does not fit in \(T.self)"))
            }
            return exact
        }

        // One type check instead of contains + decodeNil + decode.
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
            guard let index = decoder.optionalColumn(key) else { return nil }
            switch decoder.type(at: index) {
            case SQLITE_NULL: return nil
            case SQLITE_TEXT: return decoder.text(at: index)
            default: throw decoder.mismatch(type, key, index)
            }
        }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
            guard let index = decoder.optionalColumn(key) else { return nil }
            switch decoder.type(at: index) {
            case SQLITE_NULL: return nil
            case SQLITE_INTEGER: return sqlite3_column_int64(decoder.statement, index)
            default: return try decode(Int64.self, forKey: key, at: index)
            }
        }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
            guard let value = try decodeIfPresent(Int64.self, forKey: key) else { return nil }
            guard let exact = Int(exactly: value) else { throw DecodingError.typeMismatch(Int.self, .init(codingPath: [key], debugDescription: "column '\(key.stringValue)' does not fit in Int")) }
            return exact
        }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
            guard let index = decoder.optionalColumn(key) else { return nil }
            switch decoder.type(at: index) {
            case SQLITE_NULL: return nil
            case SQLITE_FLOAT, SQLITE_INTEGER: return sqlite3_column_double(decoder.statement, index)
            default: throw decoder.mismatch(type, key, index)
            }
        }

        private func decode(_ type: Int64.Type, forKey key: Key, at index: Int32) throws -> Int64 {
            guard decoder.type(at: index) == SQLITE_FLOAT,
                  let exact = Int64(exactly: sqlite3_column_double(decoder.statement, index))
            else { throw decoder.mismatch(type, key, index) }
            return exact
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            throw StoreError(code: .invalidUse, message: "nested containers are not supported for column '\(key.stringValue)'")
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw StoreError(code: .invalidUse, message: "nested containers are not supported for column '\(key.stringValue)'")
        }
        func superDecoder() throws -> any Decoder { decoder }
        func superDecoder(forKey key: Key) throws -> any Decoder { decoder }
    }
}

/// Thrown by `SingleValueReader` when a type wants a container a column
/// cannot give: the caller then decodes the column's JSON text.
private struct NeedsJSON: Error {}

/// Feeds one stored value to a type that decodes from a single value.
private struct SingleValueReader<K: CodingKey>: Decoder, SingleValueDecodingContainer {
    let value: SQLiteValue
    let key: K
    var codingPath: [any CodingKey] { [key] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> { throw NeedsJSON() }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw NeedsJSON() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { value.isNull }
    func decode(_ type: Bool.Type) throws -> Bool { try convert(type) }
    func decode(_ type: String.Type) throws -> String { try convert(type) }
    func decode(_ type: Double.Type) throws -> Double { try convert(type) }
    func decode(_ type: Float.Type) throws -> Float { Float(try convert(Double.self)) }
    func decode(_ type: Int.Type) throws -> Int { try convert(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try fixed(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try fixed(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try fixed(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try convert(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try fixed(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try fixed(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try fixed(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try fixed(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try fixed(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try StatementDecoder.decodeValue(type, from: value, key: key)
    }

    private func convert<T: SQLiteValueConvertible>(_ type: T.Type) throws -> T {
        guard let converted = T(sqliteValue: value) else {
            throw DecodingError.typeMismatch(type, .init(codingPath: [key], debugDescription: "column '\(key.stringValue)' holds \(value.typeName), which is not a \(T.self)"))
        }
        return converted
    }

    private func fixed<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        guard let exact = T(exactly: try convert(Int64.self)) else {
            throw DecodingError.typeMismatch(type, .init(codingPath: [key], debugDescription: "column '\(key.stringValue)' does not fit in \(T.self)"))
        }
        return exact
    }
}
