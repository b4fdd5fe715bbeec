import Foundation

/// Encodes a model straight into a prepared statement's parameters: each
/// coding key is a parameter named after its column. No intermediate
/// dictionary, no JSON.
final class StatementEncoder: Encoder {
    var statement: SQLiteStatement
    let map: ColumnMap
    let tableName: String
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(statement: SQLiteStatement, parameterNames: [String], tableName: String) {
        self.statement = statement
        self.map = ColumnMap(names: parameterNames)
        self.tableName = tableName
    }

    /// Binds every column of a model, through its `write(to:)`.
    @inline(__always)
    func encode<M: Model>(_ value: M) throws {
        map.startValue()
        var writer = RowWriter(sink: self)
        try value.write(to: &writer)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(Container(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnsupportedContainer<JSONKey>(message: "a model encodes as a keyed container of columns, not an unkeyed one")
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        UnsupportedContainer<JSONKey>(message: "a model encodes as a keyed container of columns, not a single value")
    }

    @inline(__always)
    fileprivate func parameter(_ name: String) throws -> Int32 {
        guard let index = map.index(of: name) else {
            throw StoreError(code: .unknownColumn, message: "no column '\(name)' in table \(tableName)")
        }
        return index + 1
    }

    @inline(__always)
    fileprivate func check(_ code: Int32) throws {
        try StatementHandle.check(code, of: statement)
    }

    fileprivate func bind(_ value: SQLiteValue, at index: Int32) throws {
        try check(StatementHandle.bind(value, to: statement, at: index))
    }

    @inline(__always)
    fileprivate func bindText(_ string: String, at index: Int32) throws {
        try check(StatementHandle.bindText(string, to: statement, at: index))
    }

    /// The SQLite value of a property of any Encodable type.
    static func sqliteValue<T: Encodable>(of value: T) throws -> SQLiteValue {
        if let convertible = value as? any SQLiteValueConvertible {
            return convertible.sqliteValue
        }
        let probe = SingleValueProbe()
        try value.encode(to: probe)
        if let captured = probe.value, !probe.needsJSON {
            return captured
        }
        // A struct, an array, a dictionary: store it as JSON text, with sorted
        // keys so equal values store equal text.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(value)
        return .text(String(decoding: data, as: UTF8.self))
    }

    private struct Container<Key: CodingKey>: KeyedEncodingContainerProtocol {
        // unowned(unsafe): a container never outlives the encode call of the
        // encoder that made it, and skipping reference counting matters here.
        unowned(unsafe) let encoder: StatementEncoder
        var codingPath: [any CodingKey] { [] }

        // The same binding as `RowWriter`'s (the `ColumnSink` methods), by the key's name.
        mutating func encodeNil(forKey key: Key) throws { try encoder.writeNull(key.stringValue) }
        mutating func encode(_ value: Bool, forKey key: Key) throws { try encoder.writeInt64(value ? 1 : 0, key.stringValue) }
        mutating func encode(_ value: String, forKey key: Key) throws { try encoder.writeText(value, key.stringValue) }
        mutating func encode(_ value: Double, forKey key: Key) throws { try encoder.writeDouble(value, key.stringValue) }
        mutating func encode(_ value: Float, forKey key: Key) throws { try encode(Double(value), forKey: key) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { try encoder.writeInt64(value, key.stringValue) }
        mutating func encode(_ value: Int, forKey key: Key) throws { try encode(Int64(value), forKey: key) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { try encode(Int64(value), forKey: key) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { try encode(Int64(value), forKey: key) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { try encode(Int64(value), forKey: key) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { try encode(try exactInt64(value, key), forKey: key) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { try encode(Int64(value), forKey: key) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { try encode(Int64(value), forKey: key) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { try encode(Int64(value), forKey: key) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { try encode(try exactInt64(value, key), forKey: key) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            try encoder.writeValue(try StatementEncoder.sqliteValue(of: value), key.stringValue)
        }

        // Synthesized conformances skip nil optionals through encodeIfPresent;
        // a column must still get NULL, so these bind it.
        mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            KeyedEncodingContainer(UnsupportedContainer<NestedKey>(message: "nested containers are not supported for column '\(key.stringValue)'; give the property a Codable type of its own, which is stored as JSON"))
        }
        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            UnsupportedContainer<Key>(message: "nested containers are not supported for column '\(key.stringValue)'")
        }
        mutating func superEncoder() -> any Encoder { encoder }
        mutating func superEncoder(forKey key: Key) -> any Encoder { encoder }

        private func exactInt64<T: BinaryInteger>(_ value: T, _ key: Key) throws -> Int64 {
            guard let exact = Int64(exactly: value) else {
                throw StoreError(code: .typeMismatch, message: "value of '\(key.stringValue)' does not fit in SQLite's 64-bit integer")
            }
            return exact
        }
    }
}

extension StatementEncoder: ColumnSink {
    func writeNull(_ column: String) throws { try check(StatementHandle.bindNull(to: statement, at: try parameter(column))) }
    func writeInt64(_ value: Int64, _ column: String) throws { try check(StatementHandle.bind(value, to: statement, at: try parameter(column))) }
    func writeDouble(_ value: Double, _ column: String) throws { try check(StatementHandle.bind(value, to: statement, at: try parameter(column))) }
    func writeText(_ value: String, _ column: String) throws { try bindText(value, at: try parameter(column)) }
    func writeValue(_ value: SQLiteValue, _ column: String) throws { try bind(value, at: try parameter(column)) }
    func encodeAll<M: Encodable>(_ value: M) throws { try value.encode(to: self) }
}

/// Captures the value of a type that encodes itself as a single primitive
/// (a RawRepresentable enum, a wrapper type); anything else needs JSON.
private final class SingleValueProbe: Encoder, SingleValueEncodingContainer {
    var value: SQLiteValue?
    var needsJSON = false
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        needsJSON = true
        return KeyedEncodingContainer(UnsupportedContainer<Key>(message: "", silent: true))
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        needsJSON = true
        return UnsupportedContainer<JSONKey>(message: "", silent: true)
    }
    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    func encodeNil() throws { value = .null }
    func encode(_ value: Bool) throws { self.value = value.sqliteValue }
    func encode(_ value: String) throws { self.value = .text(value) }
    func encode(_ value: Double) throws { self.value = .real(value) }
    func encode(_ value: Float) throws { self.value = .real(Double(value)) }
    func encode(_ value: Int) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: Int8) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: Int16) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: Int32) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: Int64) throws { self.value = .integer(value) }
    func encode(_ value: UInt) throws { try encodeUnsigned(value) }
    func encode(_ value: UInt8) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: UInt16) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: UInt32) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: UInt64) throws { try encodeUnsigned(value) }
    func encode<T: Encodable>(_ value: T) throws { self.value = try StatementEncoder.sqliteValue(of: value) }

    private func encodeUnsigned<T: BinaryInteger>(_ value: T) throws {
        guard let exact = Int64(exactly: value) else {
            throw StoreError(code: .typeMismatch, message: "value \(value) does not fit in SQLite's 64-bit integer")
        }
        self.value = .integer(exact)
    }
}

struct JSONKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) { self.stringValue = String(intValue); self.intValue = intValue }
}

/// A container for shapes a row cannot hold: every call throws (or, when
/// `silent`, ignores, because the caller falls back to JSON).
private struct UnsupportedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol, UnkeyedEncodingContainer, SingleValueEncodingContainer {
    let message: String
    var silent = false
    var codingPath: [any CodingKey] { [] }
    var count: Int { 0 }

    private func fail() throws {
        if !silent { throw StoreError(code: .invalidUse, message: message) }
    }

    mutating func encodeNil(forKey key: Key) throws { try fail() }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try fail() }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(UnsupportedContainer<NestedKey>(message: message, silent: silent))
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { self }
    mutating func superEncoder() -> any Encoder { SingleValueProbe() }
    mutating func superEncoder(forKey key: Key) -> any Encoder { SingleValueProbe() }

    mutating func encodeNil() throws { try fail() }
    mutating func encode<T: Encodable>(_ value: T) throws { try fail() }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(UnsupportedContainer<NestedKey>(message: message, silent: silent))
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { self }
}

/// Records the coding keys a model encodes, in order, with their SQLite
/// values: to build a model's SQL, and to compare two versions of a model
/// column by column.
final class ColumnRecorder: Encoder {
    private(set) var keys: [String] = []
    private(set) var values: [SQLiteValue] = []
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// The columns a model writes, in the order it writes them.
    static func keys<M: Model>(of value: M) throws -> [String] {
        try columns(of: value).keys
    }

    /// The columns a model writes and the value of each.
    static func columns<M: Model>(of value: M) throws -> (keys: [String], values: [SQLiteValue]) {
        let recorder = ColumnRecorder()
        var writer = RowWriter(sink: recorder)
        try value.write(to: &writer)
        return (recorder.keys, recorder.values)
    }

    fileprivate func record(_ key: String, _ value: SQLiteValue) {
        if let index = keys.firstIndex(of: key) {
            values[index] = value
        } else {
            keys.append(key)
            values.append(value)
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(Container(recorder: self))
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnsupportedContainer<JSONKey>(message: "a model encodes as a keyed container of columns")
    }
    func singleValueContainer() -> any SingleValueEncodingContainer {
        UnsupportedContainer<JSONKey>(message: "a model encodes as a keyed container of columns")
    }

    private struct Container<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let recorder: ColumnRecorder
        var codingPath: [any CodingKey] { [] }
        private func record(_ key: Key, _ value: SQLiteValue) {
            recorder.record(key.stringValue, value)
        }
        private func record<T: Encodable>(_ key: Key, _ value: T?) throws {
            record(key, try value.map { try StatementEncoder.sqliteValue(of: $0) } ?? .null)
        }
        mutating func encodeNil(forKey key: Key) throws { record(key, .null) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try record(key, value) }
        mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws { try record(key, value) }
        mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { try record(key, value) }
        mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { try record(key, value) }
        mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { try record(key, value) }
        mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { try record(key, value) }
        mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { try record(key, value) }
        mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { try record(key, value) }
        mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { try record(key, value) }
        mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { try record(key, value) }
        mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { try record(key, value) }
        mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { try record(key, value) }
        mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { try record(key, value) }
        mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { try record(key, value) }
        mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { try record(key, value) }
        mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { try record(key, value) }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            record(key, .null)
            return KeyedEncodingContainer(UnsupportedContainer<NestedKey>(message: "", silent: true))
        }
        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            record(key, .null)
            return UnsupportedContainer<Key>(message: "", silent: true)
        }
        mutating func superEncoder() -> any Encoder { recorder }
        mutating func superEncoder(forKey key: Key) -> any Encoder { recorder }
    }
}

extension ColumnRecorder: ColumnSink {
    func writeNull(_ column: String) throws { record(column, .null) }
    func writeInt64(_ value: Int64, _ column: String) throws { record(column, .integer(value)) }
    func writeDouble(_ value: Double, _ column: String) throws { record(column, .real(value)) }
    func writeText(_ value: String, _ column: String) throws { record(column, .text(value)) }
    func writeValue(_ value: SQLiteValue, _ column: String) throws { record(column, value) }
    func encodeAll<M: Encodable>(_ value: M) throws { try value.encode(to: self) }
}
