import CSQLite
import Foundation

/// The storage class of a value in SQLite (its raw value is SQLite's code:
/// `SQLITE_INTEGER` ... `SQLITE_NULL`).
enum StorageClass: Int32 {
    case integer = 1, real, text, blob, null
}

/// Binding and reading values on a raw statement handle: shared by
/// `Statement` and the layers above that read rows on their hot paths (the
/// row coder, the live query's sort keys and row hashes, the row cursor),
/// so that they call no C function themselves. Each accessor is one C call,
/// inlined.
enum StatementHandle {
    /// The number of columns of the statement's result.
    @inline(__always)
    static func columnCount(_ handle: SQLiteStatement) -> Int { Int(sqlite3_column_count(handle)) }

    /// The storage class of a 0-based column's value in the current row.
    @inline(__always)
    static func storageClass(of handle: SQLiteStatement, at index: Int32) -> StorageClass {
        StorageClass(rawValue: sqlite3_column_type(handle, index)) ?? .null
    }

    /// A column as an integer (SQLite's conversion for other storage classes).
    @inline(__always)
    static func int64(of handle: SQLiteStatement, at index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }

    /// A column as a real (SQLite's conversion for other storage classes).
    @inline(__always)
    static func double(of handle: SQLiteStatement, at index: Int32) -> Double { sqlite3_column_double(handle, index) }

    /// A column's text as UTF-8 bytes (converted from the database's
    /// encoding when it differs; not validated), valid until the row changes.
    @inline(__always)
    static func utf8(of handle: SQLiteStatement, at index: Int32) -> UnsafeRawBufferPointer {
        let pointer = UnsafeRawPointer(sqlite3_column_text(handle, index))
        let count = Int(sqlite3_column_bytes(handle, index))
        return UnsafeRawBufferPointer(start: pointer, count: pointer == nil ? 0 : count)
    }

    /// A column's bytes as stored (text in the database's encoding, never
    /// converted), valid until the row changes.
    @inline(__always)
    static func bytes(of handle: SQLiteStatement, at index: Int32) -> UnsafeRawBufferPointer {
        let pointer = sqlite3_column_blob(handle, index)
        let count = Int(sqlite3_column_bytes(handle, index))
        return UnsafeRawBufferPointer(start: pointer, count: pointer == nil ? 0 : count)
    }

    /// Binds NULL at a 1-based parameter index; returns SQLite's result code.
    @inline(__always)
    static func bindNull(to handle: SQLiteStatement, at index: Int32) -> Int32 { sqlite3_bind_null(handle, index) }

    /// Binds an integer; returns SQLite's result code.
    @inline(__always)
    static func bind(_ value: Int64, to handle: SQLiteStatement, at index: Int32) -> Int32 { sqlite3_bind_int64(handle, index, value) }

    /// Binds a real; returns SQLite's result code.
    @inline(__always)
    static func bind(_ value: Double, to handle: SQLiteStatement, at index: Int32) -> Int32 { sqlite3_bind_double(handle, index, value) }

    /// Throws the statement's connection's error unless `code`, what a call
    /// on the statement returned, is `SQLITE_OK`.
    @inline(__always)
    static func check(_ code: Int32, of handle: SQLiteStatement) throws {
        guard code == SQLITE_OK else { throw StoreError(sqliteCode: code, db: sqlite3_db_handle(handle)) }
    }

    /// Binds one value at a 1-based parameter index; returns SQLite's result code.
    static func bind(_ value: SQLiteValue, to handle: SQLiteStatement, at index: Int32) -> Int32 {
        switch value {
        case .null: return sqlite3_bind_null(handle, index)
        case .integer(let int): return sqlite3_bind_int64(handle, index, int)
        case .real(let double): return sqlite3_bind_double(handle, index, double)
        case .text(let string): return bindText(string, to: handle, at: index)
        case .blob(let data):
            return data.withUnsafeBytes { buffer in
                guard let base = buffer.baseAddress else { return sqlite3_bind_zeroblob(handle, index, 0) }
                return sqlite3_bind_blob64(handle, index, base, sqlite3_uint64(buffer.count), _sluice_transient())
            }
        }
    }

    /// Binds text (copied by SQLite); returns SQLite's result code.
    @inline(__always)
    static func bindText(_ string: String, to handle: SQLiteStatement, at index: Int32) -> Int32 {
        var string = string
        return string.withUTF8 { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                // An empty buffer may have no base address; bind "" rather than NULL.
                guard let base = $0.baseAddress else { return sqlite3_bind_text(handle, index, "", 0, nil) }
                return sqlite3_bind_text(handle, index, base, Int32($0.count), _sluice_transient())
            }
        }
    }

    /// The value of a 0-based column of the current row.
    static func value(of handle: SQLiteStatement, at index: Int32) -> SQLiteValue {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, index))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, index))
        case SQLITE_TEXT: return .text(text(of: handle, at: index) ?? "")
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(handle, index))
            guard count > 0, let pointer = sqlite3_column_blob(handle, index) else { return .blob(Data()) }
            return .blob(Data(bytes: pointer, count: count))
        default: return .null
        }
    }

    /// A protected or unprotected `sqlite3_value` (a preupdate hook's old or new value).
    static func value(_ value: OpaquePointer) -> SQLiteValue {
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: return .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT: return .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            guard let pointer = sqlite3_value_text(value) else { return .text("") }
            let count = Int(sqlite3_value_bytes(value))
            return .text(String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_value_bytes(value))
            guard count > 0, let pointer = sqlite3_value_blob(value) else { return .blob(Data()) }
            return .blob(Data(bytes: pointer, count: count))
        default: return .null
        }
    }

    /// The column's text, or nil for NULL (SQLite gives a NULL pointer for
    /// NULL and the text form of any other value).
    @inline(__always)
    static func text(of handle: SQLiteStatement, at index: Int32) -> String? {
        guard let pointer = sqlite3_column_text(handle, index) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, index))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }
}
