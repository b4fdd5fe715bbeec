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
        out.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { bytes in
            // Runs without anything to escape are copied whole.
            var start = 0
            for index in bytes.indices {
                let byte = bytes[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
                start = index + 1
                switch byte {
                case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
                case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
                case 0x0A: out.append(contentsOf: "\\n".utf8)
                case 0x0D: out.append(contentsOf: "\\r".utf8)
                case 0x09: out.append(contentsOf: "\\t".utf8)
                default:
                    let digits = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: "\\u00".utf8)
                    out.append(digits[Int(byte >> 4)])
                    out.append(digits[Int(byte & 0xF)])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
        }
        out.append(UInt8(ascii: "\""))
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
