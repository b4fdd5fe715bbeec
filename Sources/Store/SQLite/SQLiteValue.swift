import Foundation

/// A value as SQLite stores it: one of its five storage classes.
///
/// ```swift
/// let row = try db.fetchRows(sql: "SELECT 1, 'a', NULL")[0]
/// row[0] // .integer(1)
/// ```
///
/// Related SQLite documentation: <https://www.sqlite.org/datatype3.html>
public enum SQLiteValue: Sendable {
    /// SQL NULL.
    case null
    /// A signed 64-bit integer.
    case integer(Int64)
    /// An IEEE 754 double.
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Raw bytes.
    case blob(Data)

    /// Whether the value is SQL NULL.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The name of the storage class, as SQLite's `typeof()` spells it.
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .integer: return "integer"
        case .real: return "real"
        case .text: return "text"
        case .blob: return "blob"
        }
    }
}

extension SQLiteValue: Hashable {
    /// Equality as SQLite stores values: text compares by its UTF-8 bytes,
    /// so `"e\u{301}"` and `"é"` differ (Swift's `String ==` would call them
    /// equal, but they are different values to SQLite, and sort apart).
    public static func == (lhs: SQLiteValue, rhs: SQLiteValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.integer(let x), .integer(let y)): return x == y
        case (.real(let x), .real(let y)): return x == y || (x.isNaN && y.isNaN)
        case (.text(let x), .text(let y)): return x.utf8.elementsEqual(y.utf8)
        case (.blob(let x), .blob(let y)): return x == y
        default: return false
        }
    }

    /// Hashes what `==` compares (text by its UTF-8 bytes).
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .integer(let value): hasher.combine(1); hasher.combine(value)
        case .real(let value): hasher.combine(2); hasher.combine(value)
        case .text(let value):
            hasher.combine(3)
            var copy = value
            copy.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        case .blob(let value): hasher.combine(4); hasher.combine(value)
        }
    }
}

extension SQLiteValue: CustomStringConvertible {
    /// A readable rendering: `NULL`, numbers as they are, text unquoted, blobs as hex.
    public var description: String {
        switch self {
        case .null: return "NULL"
        case .integer(let value): return String(value)
        case .real(let value): return String(value)
        case .text(let value): return value
        case .blob(let data): return "x'" + data.map { String(format: "%02x", $0) }.joined() + "'"
        }
    }
}

extension SQLiteValue: ExpressibleByNilLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByBooleanLiteral
{
    /// `nil` is SQL NULL.
    public init(nilLiteral: ()) { self = .null }
    /// An integer literal is an SQLite integer.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// A float literal is an SQLite real.
    public init(floatLiteral value: Double) { self = .real(value) }
    /// A string literal is SQLite text.
    public init(stringLiteral value: String) { self = .text(value) }
    /// A boolean is stored as the integer 0 or 1, as SQLite does.
    public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}

extension SQLiteValue {
    /// The value as an SQL literal (a column's `DEFAULT`): a number, a quoted
    /// string (`'O''Brien'`), `X'…'` for bytes, `NULL`.
    var sqlLiteral: String {
        switch self {
        case .null: return "NULL"
        case .integer(let value): return String(value)
        case .real(let value): return value.isFinite ? "\(value)" : (value > 0 ? "9e999" : (value < 0 ? "-9e999" : "NULL"))
        case .text(let text): return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        case .blob(let data): return "X'" + data.map { String(format: "%02X", $0) }.joined() + "'"
        }
    }
}
