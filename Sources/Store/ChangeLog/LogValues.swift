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
        let out = LogJSON()
        out.append(UInt8(ascii: "{"))
        var first = true
        for index in columns where index < values.count {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            out.appendString(index < names.count ? names[index] : "$\(index)")
            out.append(UInt8(ascii: ":"))
            out.append(values[index])
        }
        out.append(UInt8(ascii: "}"))
        return out.bytes
    }

    // MARK: - Writing (an SQL function)

    /// Registers `sluice_log_object(text, value, text, value, ..., text)` on
    /// a Sluice writer's connection: the texts (JSON written in advance:
    /// `{"id":`, `,"name":`, `}`, see `objectFragments`) copied as they are,
    /// each value encoded as `LogJSON` encodes it. With the fragments of a
    /// table's columns it gives the JSON object `encode(names:values:columns:)`
    /// writes, made straight from SQLite's values (no Swift values in
    /// between), for the log's bulk writes and temporary triggers. Foreign
    /// writers' triggers, which cannot call it, use `sqlExpression`.
    static func registerObjectFunction(on handle: OpaquePointer) {
        // One buffer per connection, reused by every call.
        let buffer = Unmanaged.passRetained(LogJSON()).toOpaque()
        sqlite3_create_function_v2(handle, objectFunction, -1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, buffer, { context, count, arguments in
            guard let arguments, let data = sqlite3_user_data(context) else { return }
            let out = Unmanaged<LogJSON>.fromOpaque(data).takeUnretainedValue()
            out.removeAll()
            // Arguments alternate: JSON text copied as it is, then a value to encode.
            for index in 0..<Int(count) {
                let argument = arguments[index]
                if index % 2 == 0 {
                    out.append(UnsafeBufferPointer(start: sqlite3_value_text(argument), count: Int(sqlite3_value_bytes(argument))))
                } else {
                    LogValues.write(argument, to: out)
                }
            }
            out.base.withMemoryRebound(to: CChar.self, capacity: out.count) {
                sqlite3_result_text(context, $0, Int32(out.count), _sluice_transient())
            }
        }, nil, nil, { data in
            if let data { Unmanaged<LogJSON>.fromOpaque(data).release() }
        })
    }

    /// The function `registerObjectFunction(on:)` installs.
    static let objectFunction = "sluice_log_object"

    /// The JSON texts `sluice_log_object` puts around the values of `names`:
    /// `{"a":`, `,"b":`, ..., `}` (one more than the names).
    static func objectFragments(names: [String]) -> [String] {
        var fragments: [String] = []
        for (offset, name) in names.enumerated() {
            let fragment = LogJSON()
            fragment.append(UInt8(ascii: offset == 0 ? "{" : ","))
            fragment.appendString(name)
            fragment.append(UInt8(ascii: ":"))
            fragments.append(String(decoding: fragment.bytes, as: UTF8.self))
        }
        fragments.append(names.isEmpty ? "{}" : "}")
        return fragments
    }

    /// Writes one value argument of `sluice_log_object` as `LogJSON.append(_:)` writes a value.
    private static func write(_ value: OpaquePointer?, to out: LogJSON) {
        switch sqlite3_value_type(value) {
        case SQLITE_TEXT:
            out.appendString(utf8: UnsafeBufferPointer(start: sqlite3_value_text(value), count: Int(sqlite3_value_bytes(value))))
        case SQLITE_INTEGER: out.appendInteger(sqlite3_value_int64(value))
        case SQLITE_FLOAT: out.appendReal(sqlite3_value_double(value))
        case SQLITE_BLOB: out.appendBlob(UnsafeRawBufferPointer(start: sqlite3_value_blob(value), count: Int(sqlite3_value_bytes(value))))
        default: out.appendNull()
        }
    }

    // MARK: - Writing (SQL, for triggers)

    /// An SQL expression giving the JSON text of `operand` (`NEW."age"`), as `LogJSON.append(_:)` writes it.
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
