import Foundation

/// A Swift type that stores as one SQLite value.
///
/// The row coder binds and reads these types directly, without going through
/// an intermediate representation. Conform your own types to store them in
/// one column:
///
/// ```swift
/// extension Celsius: SQLiteValueConvertible {
///     public var sqliteValue: SQLiteValue { .real(degrees) }
///     public init?(sqliteValue: SQLiteValue) {
///         guard let degrees = Double(sqliteValue: sqliteValue) else { return nil }
///         self.init(degrees: degrees)
///     }
/// }
/// ```
public protocol SQLiteValueConvertible: Sendable {
    /// The value to store.
    var sqliteValue: SQLiteValue { get }
    /// Creates an instance from a stored value, or returns nil if the value
    /// cannot represent one (a text in an integer field, for example).
    init?(sqliteValue: SQLiteValue)
    /// The type a column of this type is declared with, in a migration made
    /// from a model (`Migration.table(for:version:)`); `.any` (no declared
    /// type) unless the type says otherwise: the standard types do, an enum
    /// takes its raw value's.
    static var columnType: ColumnType { get }
    /// Whether a column of this type may hold NULL: true for optionals.
    static var isNullableColumn: Bool { get }
}

extension SQLiteValueConvertible {
    /// No declared type.
    public static var columnType: ColumnType { .any }
    /// Not nullable.
    public static var isNullableColumn: Bool { false }
}

extension SQLiteValue: SQLiteValueConvertible {
    /// The value itself.
    public var sqliteValue: SQLiteValue { self }
    /// The value itself.
    public init?(sqliteValue: SQLiteValue) { self = sqliteValue }
}

extension Int64: SQLiteValueConvertible {
    /// Declared INTEGER.
    public static var columnType: ColumnType { .integer }
    /// An SQLite integer.
    public var sqliteValue: SQLiteValue { .integer(self) }
    /// Reads an integer, or a real that holds an integral value.
    public init?(sqliteValue: SQLiteValue) {
        switch sqliteValue {
        case .integer(let value): self = value
        case .real(let value):
            guard let exact = Int64(exactly: value) else { return nil }
            self = exact
        default: return nil
        }
    }
}

extension Int: SQLiteValueConvertible {
    /// Declared INTEGER.
    public static var columnType: ColumnType { .integer }
    /// An SQLite integer.
    public var sqliteValue: SQLiteValue { .integer(Int64(self)) }
    /// Reads an integer that fits.
    public init?(sqliteValue: SQLiteValue) {
        guard let value = Int64(sqliteValue: sqliteValue), let exact = Int(exactly: value) else { return nil }
        self = exact
    }
}

extension Int32: SQLiteValueConvertible {
    /// Declared INTEGER.
    public static var columnType: ColumnType { .integer }
    /// An SQLite integer.
    public var sqliteValue: SQLiteValue { .integer(Int64(self)) }
    /// Reads an integer that fits.
    public init?(sqliteValue: SQLiteValue) {
        guard let value = Int64(sqliteValue: sqliteValue), let exact = Int32(exactly: value) else { return nil }
        self = exact
    }
}

extension Double: SQLiteValueConvertible {
    /// Declared REAL.
    public static var columnType: ColumnType { .real }
    /// An SQLite real.
    public var sqliteValue: SQLiteValue { .real(self) }
    /// Reads a real or an integer.
    public init?(sqliteValue: SQLiteValue) {
        switch sqliteValue {
        case .real(let value): self = value
        case .integer(let value): self = Double(value)
        default: return nil
        }
    }
}

extension Bool: SQLiteValueConvertible {
    /// Declared INTEGER.
    public static var columnType: ColumnType { .integer }
    /// The integer 0 or 1.
    public var sqliteValue: SQLiteValue { .integer(self ? 1 : 0) }
    /// Reads an integer: zero is false, anything else true.
    public init?(sqliteValue: SQLiteValue) {
        guard case .integer(let value) = sqliteValue else { return nil }
        self = value != 0
    }
}

extension String: SQLiteValueConvertible {
    /// Declared TEXT.
    public static var columnType: ColumnType { .text }
    /// SQLite text.
    public var sqliteValue: SQLiteValue { .text(self) }
    /// Reads text only: numbers are not turned into strings silently.
    public init?(sqliteValue: SQLiteValue) {
        guard case .text(let value) = sqliteValue else { return nil }
        self = value
    }
}

extension Data: SQLiteValueConvertible {
    /// Declared BLOB.
    public static var columnType: ColumnType { .blob }
    /// An SQLite blob.
    public var sqliteValue: SQLiteValue { .blob(self) }
    /// Reads a blob.
    public init?(sqliteValue: SQLiteValue) {
        guard case .blob(let value) = sqliteValue else { return nil }
        self = value
    }
}

extension Date: SQLiteValueConvertible {
    /// Declared TEXT.
    public static var columnType: ColumnType { .text }
    /// Text in UTC, `yyyy-MM-dd HH:mm:ss.SSS`, which sorts in time order and
    /// works with SQLite's date functions.
    public var sqliteValue: SQLiteValue { .text(SQLiteDateFormat.string(from: self)) }
    /// Reads that text format (also without milliseconds, or with a `T`), or
    /// a number of seconds since 1970.
    public init?(sqliteValue: SQLiteValue) {
        switch sqliteValue {
        case .text(let text):
            guard let date = SQLiteDateFormat.date(from: text) else { return nil }
            self = date
        case .integer(let seconds): self = Date(timeIntervalSince1970: TimeInterval(seconds))
        case .real(let seconds): self = Date(timeIntervalSince1970: seconds)
        default: return nil
        }
    }
}

extension UUID: SQLiteValueConvertible {
    /// Declared TEXT.
    public static var columnType: ColumnType { .text }
    /// Its text (`E621E1F8-C36C-495A-93FC-0C247A3E6E5F`), as `Codable` stores it,
    /// so a model's UUID property and a filter's UUID argument compare equal.
    public var sqliteValue: SQLiteValue { .text(uuidString) }
    /// Reads that text (in either case) or 16 bytes.
    public init?(sqliteValue: SQLiteValue) {
        switch sqliteValue {
        case .text(let text):
            guard let uuid = UUID(uuidString: text) else { return nil }
            self = uuid
        case .blob(let data) where data.count == 16:
            let bytes = Array(data)
            self = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                               bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
        default:
            return nil
        }
    }
}

/// An enum (or wrapper) with a raw value stores as its raw value, as `Codable`
/// stores it: declare the conformance and nothing else.
///
/// ```swift
/// enum Priority: Int, Codable, SQLiteValueConvertible { case low, high }
/// let urgent = try store.objects(Task.self).filter("priority == $0", Priority.high)
/// ```
extension SQLiteValueConvertible where Self: RawRepresentable, RawValue: SQLiteValueConvertible {
    /// The raw value's.
    public static var columnType: ColumnType { RawValue.columnType }
    /// The raw value's.
    public var sqliteValue: SQLiteValue { rawValue.sqliteValue }
    /// The case whose raw value is stored, or nil.
    public init?(sqliteValue: SQLiteValue) {
        guard let raw = RawValue(sqliteValue: sqliteValue) else { return nil }
        self.init(rawValue: raw)
    }
}

extension Optional: SQLiteValueConvertible where Wrapped: SQLiteValueConvertible {
    /// The wrapped type's.
    public static var columnType: ColumnType { Wrapped.columnType }
    /// NULL is nil.
    public static var isNullableColumn: Bool { true }
    /// NULL for nil, otherwise the wrapped value's.
    public var sqliteValue: SQLiteValue {
        switch self {
        case .none: return .null
        case .some(let wrapped): return wrapped.sqliteValue
        }
    }
    /// nil for NULL, otherwise the wrapped type's reading (which may fail).
    public init?(sqliteValue: SQLiteValue) {
        if sqliteValue.isNull {
            self = .none
        } else if let wrapped = Wrapped(sqliteValue: sqliteValue) {
            self = .some(wrapped)
        } else {
            return nil
        }
    }
}

/// The date text format Sluice stores, in UTC.
enum SQLiteDateFormat {
    static func string(from date: Date) -> String {
        let totalMillis = (date.timeIntervalSince1970 * 1000).rounded()
        let millis = Int64(totalMillis)
        var seconds = millis / 1000
        var fraction = millis % 1000
        if fraction < 0 { fraction += 1000; seconds -= 1 }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 { secondOfDay += 86_400; days -= 1 }
        let (year, month, day) = civilDate(fromDays: days)
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + " "
            + pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay / 60 % 60, 2) + ":"
            + pad(secondOfDay % 60, 2) + "." + pad(fraction, 3)
    }

    static func date(from text: String) -> Date? {
        // yyyy-MM-dd[ T]HH:mm[:ss[.SSS]][Z]
        let bytes = Array(text.utf8)
        func number(_ start: Int, _ count: Int) -> Int64? {
            guard start + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[start..<start + count] {
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int64(byte - 48)
            }
            return value
        }
        guard bytes.count >= 10, bytes[4] == 45, bytes[7] == 45,
              let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
              (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var seconds: Int64 = 0
        var millis: Int64 = 0
        var index = 10
        if bytes.count > 10 {
            guard bytes[10] == 32 || bytes[10] == 84, let hour = number(11, 2), bytes.count >= 16,
                  bytes[13] == 58, let minute = number(14, 2)
            else { return nil }
            seconds = hour * 3600 + minute * 60
            index = 16
            if index < bytes.count, bytes[index] == 58 {
                guard let second = number(index + 1, 2) else { return nil }
                seconds += second
                index += 3
                if index < bytes.count, bytes[index] == 46 {
                    var digits = 0
                    index += 1
                    while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                        if digits < 3 { millis = millis * 10 + Int64(bytes[index] - 48) }
                        digits += 1
                        index += 1
                    }
                    guard digits > 0 else { return nil }
                    if digits < 3 { for _ in digits..<3 { millis *= 10 } }
                }
            }
            if index < bytes.count, bytes[index] == 90 { index += 1 }
            guard index == bytes.count else { return nil }
        }
        let days = daysFromCivil(year: year, month: month, day: day)
        let total = (days * 86_400 + seconds) * 1000 + millis
        return Date(timeIntervalSince1970: TimeInterval(total) / 1000)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    // Howard Hinnant's days-from-civil algorithms (public domain).
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func civilDate(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (month <= 2 ? yoe + era * 400 + 1 : yoe + era * 400, month, day)
    }
}
