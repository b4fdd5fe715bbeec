import Foundation

/// One ORDER BY value as SQLite compares it: text is kept as the bytes
/// the collation compares (the stored bytes, in the database's encoding,
/// for BINARY; UTF-8 for NOCASE and RTRIM), never decoded into a String,
/// so invalid UTF-8 and UTF-16 databases sort exactly as SQLite sorts them.
enum SortValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(SortBytes)
    case blob(SortBytes)

    /// The value of a decoded SQLiteValue (text as UTF-8).
    init(_ value: SQLiteValue) {
        switch value {
        case .null: self = .null
        case .integer(let int): self = .integer(int)
        case .real(let double): self = .real(double)
        case .text(let string): self = .text(SortBytes(string.utf8))
        case .blob(let data): self = .blob(SortBytes(data))
        }
    }

    /// The value as SQLite holds it: text as the collation compares it
    /// (BINARY, the stored bytes in `encoding`; the others, UTF-8).
    func sqliteValue(collation: SortOrder.Collation, encoding: TextEncoding) -> SQLiteValue {
        switch self {
        case .null: return .null
        case .integer(let int): return .integer(int)
        case .real(let double): return .real(double)
        case .blob(let bytes): return .blob(bytes.withBytes { Data($0) })
        case .text(let bytes): return .text(bytes.withBytes { (collation == .binary ? encoding : .utf8).string($0) })
        }
    }

    static func == (lhs: SortValue, rhs: SortValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.integer(let x), .integer(let y)): return x == y
        case (.real(let x), .real(let y)): return x == y || (x.isNaN && y.isNaN)
        case (.text(let x), .text(let y)), (.blob(let x), .blob(let y)): return x == y
        default: return false
        }
    }

    func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .integer(let value): hasher.combine(1); hasher.combine(value)
        case .real(let value): hasher.combine(2); hasher.combine(value.isNaN ? .nan : value)
        case .text(let bytes): hasher.combine(3); hasher.combine(bytes)
        case .blob(let bytes): hasher.combine(4); hasher.combine(bytes)
        }
    }
}

/// The position of a row in a live query: its values for the ORDER BY
/// terms (the query's orderings, then the primary key), and its rowid.
struct SortKey: Sendable, Hashable {
    /// The first ORDER BY value, inline (most queries order by one column).
    var first: SortValue
    /// The other ORDER BY values.
    var rest: [SortValue]
    /// The rowid.
    var rowID: Int64

    init(first: SortValue, rest: [SortValue], rowID: Int64) {
        self.first = first
        self.rest = rest
        self.rowID = rowID
    }

    /// A key from decoded values (text as UTF-8).
    init(first: SQLiteValue, rest: [SQLiteValue], rowID: Int64) {
        self.init(first: SortValue(first), rest: rest.map(SortValue.init), rowID: rowID)
    }

    func value(at index: Int) -> SortValue {
        index == 0 ? first : rest[index - 1]
    }

    /// Whether the ORDER BY values are the same (the rowid aside).
    func hasSameValues(as other: SortKey) -> Bool {
        first == other.first && rest == other.rest
    }
}

/// Compares sort keys exactly as SQLite's ORDER BY does: NULL, then
/// numbers (integers and reals compared by value), then text by the
/// column's collation, then blobs; DESC reverses (so NULL comes last).
///
/// Related SQLite documentation: <https://www.sqlite.org/datatype3.html#sort_order>
struct SortOrder: Sendable {
    /// A collating sequence SQLite ships with.
    enum Collation: Sendable {
        case binary, nocase, rtrim

        /// The collation for a name, or nil for one Sluice cannot reproduce.
        init?(name: String?) {
            switch name?.uppercased() ?? "BINARY" {
            case "BINARY": self = .binary
            case "NOCASE": self = .nocase
            case "RTRIM": self = .rtrim
            default: return nil
            }
        }
    }

    struct Term: Sendable {
        var descending: Bool
        var collation: Collation
    }

    var terms: [Term]

    /// Whether `a` sorts before `b`.
    func less(_ a: SortKey, _ b: SortKey) -> Bool {
        compare(a, b) < 0
    }

    /// -1, 0 or 1. Keys with the same ORDER BY values differ by rowid, which
    /// is part of the primary-key terms (for rowid tables), so this is a
    /// strict total order.
    func compare(_ a: SortKey, _ b: SortKey) -> Int {
        for (index, term) in terms.enumerated() {
            let result = Self.compare(a.value(at: index), b.value(at: index), collation: term.collation)
            if result != 0 { return term.descending ? -result : result }
        }
        return a.rowID < b.rowID ? -1 : (a.rowID == b.rowID ? 0 : 1)
    }

    private static func storageClass(_ value: SortValue) -> Int {
        switch value {
        case .null: return 0
        case .integer, .real: return 1
        case .text: return 2
        case .blob: return 3
        }
    }

    static func compare(_ a: SortValue, _ b: SortValue, collation: Collation) -> Int {
        switch (a, b) {
        case (.null, .null): return 0
        case (.integer(let x), .integer(let y)): return x < y ? -1 : (x == y ? 0 : 1)
        case (.real(let x), .real(let y)): return x < y ? -1 : (x == y ? 0 : 1)
        case (.integer(let x), .real(let y)): return compare(integer: x, real: y)
        case (.real(let x), .integer(let y)): return -compare(integer: y, real: x)
        case (.text(let x), .text(let y)): return compare(text: x, y, collation: collation)
        case (.blob(let x), .blob(let y)): return SortBytes.compare(x, y)
        default:
            let (ca, cb) = (storageClass(a), storageClass(b))
            return ca < cb ? -1 : (ca == cb ? 0 : 1)
        }
    }

    /// An integer against a real, exactly (no rounding of large integers),
    /// as SQLite's sqlite3IntFloatCompare.
    static func compare(integer: Int64, real: Double) -> Int {
        if real.isNaN { return 1 }
        if real < -9_223_372_036_854_775_808.0 { return 1 }
        if real >= 9_223_372_036_854_775_808.0 { return -1 }
        let truncated = Int64(real)  // in range: checked above
        if integer < truncated { return -1 }
        if integer > truncated { return 1 }
        let fraction = real - Double(truncated)
        return fraction > 0 ? -1 : (fraction < 0 ? 1 : 0)
    }

    static func compare(text a: SortBytes, _ b: SortBytes, collation: Collation) -> Int {
        switch collation {
        case .binary: return SortBytes.compare(a, b)
        case .nocase: return a.withBytes { x in b.withBytes { y in compareBytes(x, y, fold: true) } }
        case .rtrim: return a.withBytes { x in b.withBytes { y in compareBytes(trimmingSpaces(x), trimmingSpaces(y)) } }
        }
    }

    /// Text as SQLite compares it (`a` and `b` as UTF-8).
    static func compare(text a: String, _ b: String, collation: Collation) -> Int {
        compare(text: SortBytes(a.utf8), SortBytes(b.utf8), collation: collation)
    }

    private static func trimmingSpaces(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0x20 { end -= 1 }
        return UnsafeBufferPointer(rebasing: bytes[0..<end])
    }

    /// memcmp order, then length; `fold` lower-cases ASCII letters as NOCASE does.
    static func compareBytes(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>, fold: Bool = false) -> Int {
        let count = min(x.count, y.count)
        for index in 0..<count {
            var p = x[index], q = y[index]
            if fold {
                if p >= 0x41 && p <= 0x5A { p += 0x20 }
                if q >= 0x41 && q <= 0x5A { q += 0x20 }
            }
            if p != q { return p < q ? -1 : 1 }
        }
        return x.count < y.count ? -1 : (x.count == y.count ? 0 : 1)
    }
}
