import Foundation

/// Decodes a model straight from a statement's current row: each coding key
/// reads the column of that name. No intermediate dictionary, no JSON.
@usableFromInline
final class StatementDecoder: Decoder {
    let statement: SQLiteStatement
    let map: ColumnMap
    let columnNames: [String]
    let tableName: String
    private var cachedKeyType: ObjectIdentifier?
    private var cachedContainer: AnyObject?
    @usableFromInline
    var codingPath: [any CodingKey] { [] }
    @usableFromInline
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    @usableFromInline
    init(statement: Statement, tableName: String) {
        self.statement = statement.handle
        self.columnNames = statement.columnNames
        self.map = ColumnMap(names: statement.columnNames)
        self.tableName = tableName
    }

    /// Decodes the current row as a model, through `init(row:)`.
    ///
    /// Inlinable (with `Database.fetchAll`), so `init(row:)` is a direct call.
    @inlinable
    func decode<M: Model>(_ type: M.Type) throws -> M {
        let row = startRow()
        do {
            return try M(row: row)
        } catch let error as DecodingError {
            throw failure(decoding: M.self, error)
        }
    }

    /// A reader of the current row, its column lookups at the row's start.
    @usableFromInline
    func startRow() -> RowReader {
        map.startValue()
        return RowReader(decoder: self)
    }

    /// A decoding error as a `StoreError` naming the model and the table.
    @usableFromInline
    func failure(decoding type: Any.Type, _ error: DecodingError) -> StoreError {
        StoreError(code: .decoding, message: "cannot decode \(type) from table \(tableName): \(Self.describe(error))")
    }

    @usableFromInline
    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        // Reuse the container (and the standard library's box around it)
        // from row to row: it holds no per-row state, and making one costs an
        // allocation and a metadata lookup per row. `KeyedDecodingContainer`
        // is a struct around one class reference; the size check keeps this
        // correct (just slower) should that ever change.
        let keyType = ObjectIdentifier(Key.self)
        if keyType == cachedKeyType, let cachedContainer,
           MemoryLayout<KeyedDecodingContainer<Key>>.size == MemoryLayout<AnyObject>.size {
            return unsafeBitCast(cachedContainer, to: KeyedDecodingContainer<Key>.self)
        }
        let container = KeyedDecodingContainer(Container<Key>(decoder: self))
        if MemoryLayout<KeyedDecodingContainer<Key>>.size == MemoryLayout<AnyObject>.size {
            cachedKeyType = keyType
            cachedContainer = unsafeBitCast(container, to: AnyObject.self)
        }
        return container
    }

    @usableFromInline
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw StoreError(code: .invalidUse, message: "a model decodes from a keyed container of columns, not an unkeyed one")
    }

    @usableFromInline
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
    fileprivate func type(at index: Int32) -> StorageClass { StatementHandle.storageClass(of: statement, at: index) }

    func value(at index: Int32) -> SQLiteValue {
        StatementHandle.value(of: statement, at: index)
    }

    /// The value of a column by name (any ASCII case), or nil when the row has none.
    func value(named name: String) -> SQLiteValue? {
        map.index(of: name).map(value(at:))
    }

    /// The column's text, or nil for NULL.
    ///
    /// One call instead of checking the type first: SQLite returns a NULL
    /// pointer for NULL, and the text form of any other value (a TEXT column
    /// holds only text and NULL anyway: its affinity converts numbers on
    /// insert). The fetch benchmark measured the extra type check per column.
    @inline(__always)
    func optionalText(at index: Int32) -> String? {
        StatementHandle.text(of: statement, at: index)
    }

    @inline(__always)
    func text(at index: Int32) -> String {
        StatementHandle.text(of: statement, at: index) ?? ""
    }

    fileprivate func mismatch<T>(_ type: T.Type, _ key: some CodingKey, _ index: Int32) -> DecodingError {
        let context = DecodingError.Context(codingPath: [key], debugDescription: problem(T.self, column: key.stringValue, at: index))
        return self.type(at: index) == .null ? .valueNotFound(type, context) : .typeMismatch(type, context)
    }

    // MARK: - The typed-read core, shared by the Codable container and `RowReader`

    /// A column whose value is not of the type asked for.
    struct Mismatch: Error {}

    /// The column's integer, nil for NULL (a real that holds an integral
    /// value counts as that integer).
    @inline(__always)
    func int64(at index: Int32) throws(Mismatch) -> Int64? {
        switch type(at: index) {
        case .integer: return StatementHandle.int64(of: statement, at: index)
        case .null: return nil
        case .real:
            guard let exact = Int64(exactly: StatementHandle.double(of: statement, at: index)) else { throw Mismatch() }
            return exact
        case .text, .blob: throw Mismatch()
        }
    }

    /// The column's number as a real, nil for NULL.
    @inline(__always)
    func double(at index: Int32) throws(Mismatch) -> Double? {
        switch type(at: index) {
        case .real, .integer: return StatementHandle.double(of: statement, at: index)
        case .null: return nil
        case .text, .blob: throw Mismatch()
        }
    }

    /// The column's integer in a narrower type, nil for NULL.
    @inline(__always)
    func integer<T: FixedWidthInteger>(_ type: T.Type, at index: Int32) throws(Mismatch) -> T? {
        guard let value = try int64(at: index) else { return nil }
        guard let exact = T(exactly: value) else { throw Mismatch() }
        return exact
    }

    /// What is wrong with reading the column as `type`, for an error message.
    func problem(_ type: Any.Type, column: String, at index: Int32) -> String {
        let found = value(at: index)
        if found.isNull { return "column '\(column)' is NULL but \(type) is not optional" }
        if let number = Int64(sqliteValue: found) {
            return "column '\(column)' holds \(number), which does not fit in \(type)"
        }
        return "column '\(column)' holds \(found.typeName), which is not a \(type)"
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

    // MARK: - Typed reads, called by the container (through the core)

    fileprivate func decodeString(_ key: some CodingKey) throws -> String {
        let index = try column(key)
        guard let text = optionalText(at: index) else { throw mismatch(String.self, key, index) }
        return text
    }

    fileprivate func decodeStringIfPresent(_ key: some CodingKey) throws -> String? {
        guard let index = optionalColumn(key) else { return nil }
        return optionalText(at: index)
    }

    // Int64 and Int are the common cases: non-generic, so no metadata
    // lookup per call (the fetch benchmark measured it).
    fileprivate func decodeInt64(_ key: some CodingKey) throws -> Int64 {
        let index = try column(key)
        do throws(Mismatch) {
            if let value = try int64(at: index) { return value }
        } catch {}
        throw mismatch(Int64.self, key, index)
    }

    fileprivate func decodeInt64IfPresent(_ key: some CodingKey) throws -> Int64? {
        guard let index = optionalColumn(key) else { return nil }
        do throws(Mismatch) { return try int64(at: index) } catch { throw mismatch(Int64.self, key, index) }
    }

    fileprivate func decodeInt(_ key: some CodingKey) throws -> Int {
        guard let exact = Int(exactly: try decodeInt64(key)) else { throw mismatch(Int.self, key, try column(key)) }
        return exact
    }

    fileprivate func decodeIntIfPresent(_ key: some CodingKey) throws -> Int? {
        guard let value = try decodeInt64IfPresent(key) else { return nil }
        guard let exact = Int(exactly: value) else { throw mismatch(Int.self, key, try column(key)) }
        return exact
    }

    fileprivate func decodeInteger<T: FixedWidthInteger>(_ key: some CodingKey) throws -> T {
        let index = try column(key)
        do throws(Mismatch) {
            if let value = try integer(T.self, at: index) { return value }
        } catch {}
        throw mismatch(T.self, key, index)
    }

    fileprivate func decodeIntegerIfPresent<T: FixedWidthInteger>(_ key: some CodingKey) throws -> T? {
        guard let index = optionalColumn(key) else { return nil }
        do throws(Mismatch) { return try integer(T.self, at: index) } catch { throw mismatch(T.self, key, index) }
    }

    fileprivate func decodeDouble(_ key: some CodingKey) throws -> Double {
        let index = try column(key)
        do throws(Mismatch) {
            if let value = try double(at: index) { return value }
        } catch {}
        throw mismatch(Double.self, key, index)
    }

    fileprivate func decodeDoubleIfPresent(_ key: some CodingKey) throws -> Double? {
        guard let index = optionalColumn(key) else { return nil }
        do throws(Mismatch) { return try double(at: index) } catch { throw mismatch(Double.self, key, index) }
    }

    fileprivate func decodeAny<T: Decodable>(_ type: T.Type, _ key: some CodingKey) throws -> T {
        let index = try column(key)
        return try Self.decodeValue(type, from: value(at: index), key: key)
    }

    fileprivate func decodeNil(_ key: some CodingKey) throws -> Bool {
        type(at: try column(key)) == .null
    }

    /// The keyed container: every call forwards to the decoder.
    ///
    /// It holds the decoder as `Unmanaged`, a trivial value: the standard
    /// library's container box copies its container on every call, and a
    /// strong reference would cost a retain and a release per column. The
    /// decoder outlives its containers (they only live inside `decode(_:)`).
    private struct Container<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let unmanaged: Unmanaged<StatementDecoder>
        var codingPath: [any CodingKey] { [] }

        init(decoder: StatementDecoder) {
            unmanaged = Unmanaged.passUnretained(decoder)
        }

        @inline(__always)
        private func with<R>(_ body: (StatementDecoder) throws -> R) rethrows -> R {
            try unmanaged._withUnsafeGuaranteedRef(body)
        }

        var allKeys: [Key] { with { $0.columnNames.compactMap { Key(stringValue: $0) } } }
        func contains(_ key: Key) -> Bool { with { $0.map.contains(key.stringValue) } }
        func decodeNil(forKey key: Key) throws -> Bool { try with { try $0.decodeNil(key) } }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try with { try $0.decodeInt64(key) } != 0 }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try with { try $0.decodeString(key) } }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try with { try $0.decodeDouble(key) } }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { Float(try with { try $0.decodeDouble(key) }) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try with { try $0.decodeInt64(key) } }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try with { try $0.decodeInt(key) } }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try with { try $0.decodeInteger(key) } }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try with { try $0.decodeInteger(key) } }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try with { try $0.decodeInteger(key) } }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try with { try $0.decodeInteger(key) } }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try with { try $0.decodeInteger(key) } }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try with { try $0.decodeInteger(key) } }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try with { try $0.decodeInteger(key) } }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try with { try $0.decodeInteger(key) } }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try with { try $0.decodeAny(type, key) } }

        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try with { try $0.decodeStringIfPresent(key) } }
        func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try with { try $0.decodeInt64IfPresent(key) } }
        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try with { try $0.decodeIntIfPresent(key) } }
        func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try with { try $0.decodeIntegerIfPresent(key) } }
        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try with { try $0.decodeDoubleIfPresent(key) } }
        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try with { try $0.decodeInt64IfPresent(key) }.map { $0 != 0 } }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            throw StoreError(code: .invalidUse, message: "nested containers are not supported for column '\(key.stringValue)'")
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            throw StoreError(code: .invalidUse, message: "nested containers are not supported for column '\(key.stringValue)'")
        }
        func superDecoder() throws -> any Decoder { with { $0 } }
        func superDecoder(forKey key: Key) throws -> any Decoder { with { $0 } }
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
