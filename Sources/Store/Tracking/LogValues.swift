import CSQLite
import Foundation

/// The change log's encoding of a row's values: a JSON object from column
/// name to value, readable in any SQLite tool, written the same way by
/// Swift (the preupdate capture) and by SQL (triggers).
///
/// Values keep their storage class: an integer is a JSON integer, a real
/// always has a `.` or an exponent (and survives the round trip exactly),
/// text is a JSON string, a blob is `{"$blob":"<hex>"}`, NULL is `null`.
/// Infinite reals are written `9e999` / `-9e999`.
enum LogValues {
    // MARK: - Writing (Swift)

    /// `{"a":1,"b":"x"}` for the given columns of a row, as UTF-8.
    static func encode(names: [String], values: [SQLiteValue], columns: some Sequence<Int>) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        var first = true
        for index in columns where index < values.count {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            appendString(index < names.count ? names[index] : "$\(index)", to: &out)
            out.append(UInt8(ascii: ":"))
            append(values[index], to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    static func append(_ value: SQLiteValue, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .integer(let int): out.append(contentsOf: String(int).utf8)
        case .real(let double): out.append(contentsOf: realText(double).utf8)
        case .text(let text): appendString(text, to: &out)
        case .blob(let data):
            out.append(contentsOf: "{\"$blob\":\"".utf8)
            let digits = Array("0123456789abcdef".utf8)
            for byte in data {
                out.append(digits[Int(byte >> 4)])
                out.append(digits[Int(byte & 0xF)])
            }
            out.append(contentsOf: "\"}".utf8)
        }
    }

    /// A real as JSON that reads back as the same real (never as an integer).
    static func realText(_ double: Double) -> String {
        if double.isInfinite { return double < 0 ? "-9e999" : "9e999" }
        if double.isNaN { return "null" }
        let text = "\(double)"    // the shortest form that reads back exactly
        return text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) ? text : text + ".0"
    }

    private static func appendString(_ string: String, to out: inout [UInt8]) {
        var string = string
        string.withUTF8 { appendString(utf8: $0, to: &out) }
    }

    private static func appendString(utf8 bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Runs without anything to escape are copied whole.
        var start = 0
        var index = nextToEscape(in: bytes, from: 0)
        while index < bytes.count {
            let byte = bytes[index]
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
            start = index + 1
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
            case 0x0A: out.append(contentsOf: "\\n".utf8)
            case 0x0D: out.append(contentsOf: "\\r".utf8)
            case 0x09: out.append(contentsOf: "\\t".utf8)
            default:
                out.append(contentsOf: "\\u00".utf8)
                out.append(hexDigit(byte >> 4))
                out.append(hexDigit(byte & 0xF))
            }
            index = nextToEscape(in: bytes, from: start)
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
        out.append(UInt8(ascii: "\""))
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }

    /// The index of the first byte from `start` that JSON must escape (a
    /// control character, `"` or `\\`), or the count. Eight bytes at a time.
    private static func nextToEscape(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var index = start
        if let base = bytes.baseAddress {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            while index + 8 <= bytes.count {
                let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
                // A byte below 0x20, or equal to '"' or '\\', sets its high bit in `found` (the usual zero-byte test).
                let control = (word &- ones &* 0x20) & ~word
                let quote = ((word ^ (ones &* 0x22)) &- ones) & ~(word ^ (ones &* 0x22))
                let backslash = ((word ^ (ones &* 0x5C)) &- ones) & ~(word ^ (ones &* 0x5C))
                if (control | quote | backslash) & highs != 0 { break }
                index += 8
            }
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return index }
            index += 1
        }
        return index
    }

    // MARK: - Writing (an SQL function)

    /// Registers `sluice_log_object(text, value, text, value, ..., text)` on
    /// a Sluice writer's connection: the texts (JSON written in advance:
    /// `{"id":`, `,"name":`, `}`, see `objectFragments`) copied as they are,
    /// each value encoded as `append(_:to:)` does. With the fragments of a
    /// table's columns it gives the JSON object `encode(names:values:columns:)`
    /// writes, made straight from SQLite's values (no Swift values in
    /// between), for the log's bulk writes and temporary triggers. Foreign
    /// writers' triggers, which cannot call it, use `sqlExpression`.
    static func registerObjectFunction(on handle: OpaquePointer) {
        // One buffer per connection, reused by every call.
        let buffer = Unmanaged.passRetained(Buffer()).toOpaque()
        sqlite3_create_function_v2(handle, objectFunction, -1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, buffer, { context, count, arguments in
            guard let arguments, let data = sqlite3_user_data(context) else { return }
            let out = Unmanaged<Buffer>.fromOpaque(data).takeUnretainedValue()
            out.count = 0
            // Arguments alternate: JSON text copied as it is, then a value to encode.
            for index in 0..<Int(count) {
                let argument = arguments[index]
                if index % 2 == 0 {
                    let length = Int(sqlite3_value_bytes(argument))
                    out.reserve(length)
                    out.append(UnsafeBufferPointer(start: sqlite3_value_text(argument), count: length))
                } else {
                    LogValues.write(argument, to: out)
                }
            }
            out.base.withMemoryRebound(to: CChar.self, capacity: out.count) {
                sqlite3_result_text(context, $0, Int32(out.count), _sluice_transient())
            }
        }, nil, nil, { data in
            if let data { Unmanaged<Buffer>.fromOpaque(data).release() }
        })
    }

    /// The reused output of `sluice_log_object` (used on its connection's
    /// queue only): raw bytes, written after reserving room.
    private final class Buffer {
        private(set) var base: UnsafeMutablePointer<UInt8>
        private var capacity = 1024
        var count = 0

        init() { base = .allocate(capacity: 1024) }
        deinit { base.deallocate() }

        func reserve(_ extra: Int) {
            guard count + extra > capacity else { return }
            let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: max(capacity * 2, count + extra))
            grown.update(from: base, count: count)
            base.deallocate()
            base = grown
            capacity = max(capacity * 2, count + extra)
        }

        /// Appends (room reserved).
        func append(_ byte: UInt8) {
            base[count] = byte
            count += 1
        }

        /// Appends (room reserved).
        func append(_ bytes: UnsafeBufferPointer<UInt8>) {
            guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
            (base + count).update(from: source, count: bytes.count)
            count += bytes.count
        }

        func append<S: Sequence<UInt8>>(contentsOf bytes: S) {
            for byte in bytes {
                reserve(1)
                append(byte)
            }
        }
    }

    /// The function `registerObjectFunction(on:)` installs.
    static let objectFunction = "sluice_log_object"

    /// The JSON texts `sluice_log_object` puts around the values of `names`:
    /// `{"a":`, `,"b":`, ..., `}` (one more than the names).
    static func objectFragments(names: [String]) -> [String] {
        var fragments: [String] = []
        for (offset, name) in names.enumerated() {
            var fragment: [UInt8] = [UInt8(ascii: offset == 0 ? "{" : ",")]
            appendString(name, to: &fragment)
            fragment.append(UInt8(ascii: ":"))
            fragments.append(String(decoding: fragment, as: UTF8.self))
        }
        fragments.append(names.isEmpty ? "{}" : "}")
        return fragments
    }

    /// Writes one value argument of `sluice_log_object` as `append(_:to:)` writes it.
    private static func write(_ value: OpaquePointer?, to out: Buffer) {
        let type = sqlite3_value_type(value)
        if type == SQLITE_TEXT {
            let length = Int(sqlite3_value_bytes(value))
            let bytes = UnsafeBufferPointer(start: sqlite3_value_text(value), count: length)
            out.reserve(6 * length + 2)    // every byte escaped as \u00XX at worst
            out.append(UInt8(ascii: "\""))
            var start = 0
            var index = nextToEscape(in: bytes, from: 0)
            while index < length {
                out.append(UnsafeBufferPointer(rebasing: bytes[start..<index]))
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\")); out.append(byte)
                case 0x0A: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "r"))
                case 0x09: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "t"))
                default:
                    for digit in "\\u00".utf8 { out.append(digit) }
                    out.append(hexDigit(byte >> 4))
                    out.append(hexDigit(byte & 0xF))
                }
                start = index + 1
                index = nextToEscape(in: bytes, from: start)
            }
            out.append(UnsafeBufferPointer(rebasing: bytes[start...]))
            out.append(UInt8(ascii: "\""))
            return
        }
        switch type {
        case SQLITE_INTEGER:
            let integer = sqlite3_value_int64(value)
            out.reserve(20)
            if integer < 0 { out.append(UInt8(ascii: "-")) }
            // Digits of the magnitude, most significant first (Int64.min's magnitude fits a UInt64).
            var magnitude = integer.magnitude
            var digits: (UInt64, Int) = (1, 1)
            while magnitude / digits.0 >= 10 { digits.0 *= 10; digits.1 += 1 }
            for _ in 0..<digits.1 {
                out.append(UInt8(ascii: "0") + UInt8(magnitude / digits.0))
                magnitude %= digits.0
                digits.0 /= 10
            }
        case SQLITE_FLOAT:
            out.append(contentsOf: realText(sqlite3_value_double(value)).utf8)
        case SQLITE_BLOB:
            let length = Int(sqlite3_value_bytes(value))
            out.reserve(2 * length + 14)
            for byte in "{\"$blob\":\"".utf8 { out.append(byte) }
            if let blob = sqlite3_value_blob(value) {
                for byte in UnsafeRawBufferPointer(start: blob, count: length) {
                    out.append(hexDigit(byte >> 4))
                    out.append(hexDigit(byte & 0xF))
                }
            }
            out.append(UInt8(ascii: "\""))
            out.append(UInt8(ascii: "}"))
        default:
            out.append(contentsOf: "null".utf8)
        }
    }

    // MARK: - Writing (SQL, for triggers)

    /// An SQL expression giving the JSON text of `operand` (`NEW."age"`), as `append(_:to:)` writes it.
    static func sqlExpression(_ operand: String) -> String {
        "(CASE typeof(\(operand)) WHEN 'real' THEN (CASE WHEN \(operand) = 9e999 THEN '9e999' WHEN \(operand) = -9e999 THEN '-9e999' ELSE printf('%!.17g', \(operand)) END)"
            + " WHEN 'blob' THEN json_object('$blob', lower(hex(\(operand)))) ELSE json_quote(\(operand)) END)"
    }

    // MARK: - Reading

    /// The values of a logged JSON object, in the order written.
    ///
    /// - Throws: `.corrupt` naming the position when the text is not such an object.
    static func decode(_ text: String) throws -> [(name: String, value: SQLiteValue)] {
        var reader = Reader(bytes: Array(text.utf8))
        return try reader.object()
    }

    private struct Reader {
        let bytes: [UInt8]
        var position = 0

        mutating func object() throws -> [(name: String, value: SQLiteValue)] {
            var result: [(name: String, value: SQLiteValue)] = []
            try expect(UInt8(ascii: "{"))
            skipSpace()
            if peek() == UInt8(ascii: "}") { position += 1; return result }
            while true {
                skipSpace()
                let name = try string()
                skipSpace()
                try expect(UInt8(ascii: ":"))
                skipSpace()
                result.append((name, try value()))
                skipSpace()
                if peek() == UInt8(ascii: ",") { position += 1; continue }
                try expect(UInt8(ascii: "}"))
                return result
            }
        }

        mutating func value() throws -> SQLiteValue {
            switch peek() {
            case UInt8(ascii: "\""): return .text(try string())
            case UInt8(ascii: "n"):
                guard bytes[position...].starts(with: "null".utf8) else { throw failure("a value") }
                position += 4
                return .null
            case UInt8(ascii: "{"):
                let fields = try object()
                guard fields.count == 1, fields[0].name == "$blob", case .text(let hex) = fields[0].value,
                      let data = Self.data(hex: hex) else { throw failure("a {\"$blob\": hex} object") }
                return .blob(data)
            default:
                let start = position
                while let byte = peek(), byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: ".")
                        || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") || (byte >= 48 && byte <= 57) {
                    position += 1
                }
                let text = String(decoding: bytes[start..<position], as: UTF8.self)
                if !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }), let int = Int64(text) { return .integer(int) }
                guard !text.isEmpty, let double = Double(text) else {
                    position = start
                    throw failure("a value")
                }
                return .real(double)
            }
        }

        mutating func string() throws -> String {
            try expect(UInt8(ascii: "\""))
            var out: [UInt8] = []
            while let byte = peek() {
                position += 1
                switch byte {
                case UInt8(ascii: "\""): return String(decoding: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard let escaped = peek() else { throw failure("an escape") }
                    position += 1
                    switch escaped {
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800..<0xDC00).contains(scalar), bytes[position...].starts(with: "\\u".utf8) {
                            position += 2
                            let low = try hex4()
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        out.append(contentsOf: String(Unicode.Scalar(scalar).map(Character.init) ?? "\u{FFFD}").utf8)
                    default: out.append(escaped)
                    }
                default: out.append(byte)
                }
            }
            throw failure("the end of a string")
        }

        mutating func hex4() throws -> UInt32 {
            guard position + 4 <= bytes.count, let value = UInt32(String(decoding: bytes[position..<position + 4], as: UTF8.self), radix: 16) else {
                throw failure("four hex digits")
            }
            position += 4
            return value
        }

        static func data(hex: String) -> Data? {
            let digits = Array(hex.utf8)
            guard digits.count % 2 == 0 else { return nil }
            var data = Data(capacity: digits.count / 2)
            var index = 0
            while index < digits.count {
                guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
                data.append(byte)
                index += 2
            }
            return data
        }

        func peek() -> UInt8? { position < bytes.count ? bytes[position] : nil }

        mutating func skipSpace() {
            while let byte = peek(), byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { position += 1 }
        }

        mutating func expect(_ byte: UInt8) throws {
            guard peek() == byte else { throw failure("'\(Character(Unicode.Scalar(byte)))'") }
            position += 1
        }

        func failure(_ expected: String) -> StoreError {
            StoreError(code: .corrupt, message: "unreadable change log values: expected \(expected) at byte \(position) of \(String(decoding: bytes.prefix(200), as: UTF8.self))")
        }
    }
}
