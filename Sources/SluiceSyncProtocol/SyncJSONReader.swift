import Foundation

extension SyncJSON {
    /// Reads a push as `JSONDecoder` reads it (the same values, and a `DecodingError` naming
    /// the path of what is wrong, as `JSONDecoder`'s does), about ten times as fast: the
    /// service's `JSONDecoder` took 0.15–0.19 s for a 10,000-row part of a first push
    /// (2026-11-28, at 0ab385b).
    ///
    /// - Throws: `DecodingError` for a body that is not JSON, or not a push.
    public static func decode(_ type: PushRequest.Type, from bytes: UnsafeRawBufferPointer) throws -> PushRequest {
        try read(bytes) { reader in try reader.push() }
    }

    /// Reads a page of the history as `JSONDecoder` reads it.
    ///
    /// - Throws: `DecodingError` for a body that is not JSON, or not a page.
    public static func decode(_ type: PullResponse.Type, from data: Data) throws -> PullResponse {
        try read(data) { reader in try reader.page() }
    }

    /// Reads a page of rows as `JSONDecoder` reads it.
    ///
    /// - Throws: `DecodingError` for a body that is not JSON, or not a page of rows.
    public static func decode(_ type: RowsResponse.Type, from data: Data) throws -> RowsResponse {
        try read(data) { reader in try reader.rowsPage() }
    }

    /// Reads a row's values by column (a JSON object) as `JSONDecoder` reads them (the
    /// service's `sluice_row.vals`).
    ///
    /// - Throws: `DecodingError` for text that is not JSON, or not values.
    public static func decode(_ type: [String: SyncValue].Type, from data: Data) throws -> [String: SyncValue] {
        try read(data) { reader in try reader.values() }
    }

    /// Reads numbers by column (a JSON object) as `JSONDecoder` reads them (the service's
    /// `sluice_row.clocks`).
    ///
    /// - Throws: `DecodingError` for text that is not JSON, or not integers by name.
    public static func decode(_ type: [String: Int64].Type, from data: Data) throws -> [String: Int64] {
        try read(data) { reader in try reader.integers() }
    }

    /// Reads a transaction's changes (a JSON array) as `JSONDecoder` reads them.
    ///
    /// - Throws: `DecodingError` for text that is not JSON, or not changes.
    public static func decode(_ type: [SyncChange].Type, from data: Data) throws -> [SyncChange] {
        try read(data) { reader in try reader.array { reader in try reader.change() } }
    }

    /// What `body` reads from `bytes`, a whole JSON document.
    private static func read<Value>(_ bytes: UnsafeRawBufferPointer, _ body: (inout Reader) throws -> Value) throws -> Value {
        var reader = Reader(bytes)
        return try reader.document(body)
    }

    private static func read<Value>(_ data: Data, _ body: (inout Reader) throws -> Value) throws -> Value {
        try data.withUnsafeBytes { bytes in try read(bytes, body) }
    }
}

/// A key of a path in a `DecodingError`.
struct SyncJSONPathKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) {
        stringValue = String(intValue)
        self.intValue = intValue
    }
}

extension SyncJSON {
    /// A cursor over the bytes of one JSON document, reading the wire types directly (no
    /// tree in between). The path of a value is added to an error on its way out, so reading
    /// what is well formed pays nothing for it.
    struct Reader {
        let bytes: UnsafeRawBufferPointer
        var index = 0

        init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        /// The value `body` reads, with nothing but white space after it.
        mutating func document<Value>(_ body: (inout Reader) throws -> Value) throws -> Value {
            let value = try body(&self)
            skipSpace()
            guard index == bytes.count else { throw corrupted("unexpected text after the JSON value") }
            return value
        }

        // MARK: Structure

        /// Reads an object, calling `member` with each key, positioned at its value (which
        /// `member` reads, or skips with ``skipValue()``). A key twice is refused: which of
        /// the two counts is not for a reader to guess (`JSONDecoder` takes the first).
        mutating func object(_ member: (inout Reader, String) throws -> Void) throws {
            try expect(UInt8(ascii: "{"), "an object")
            skipSpace()
            if peek() == UInt8(ascii: "}") {
                index += 1
                return
            }
            // The keys so far, to refuse one twice: the first kept alone (a value's object has
            // one key, and an array for it was an allocation per value), then up to 16 in an
            // array, then in a set.
            var first: String?
            var keys: [String] = []
            var many: Set<String> = []
            while true {
                skipSpace()
                guard peek() == UInt8(ascii: "\"") else { throw corrupted("expected a key in quotes") }
                let key = try string()
                if let first, keys.count < 15 {
                    guard key != first, !keys.contains(key) else { throw corrupted("the key '\(key)' appears twice in an object") }
                    keys.append(key)
                    if keys.count == 15 { many = Set(keys + [first]) }
                } else if first == nil {
                    first = key
                } else {
                    guard many.insert(key).inserted else { throw corrupted("the key '\(key)' appears twice in an object") }
                }
                skipSpace()
                try expect(UInt8(ascii: ":"), "':' after a key")
                skipSpace()
                do {
                    try member(&self, key)
                } catch let error as DecodingError {
                    throw Self.prefixed(error, SyncJSONPathKey(stringValue: key))
                }
                skipSpace()
                switch next() {
                case UInt8(ascii: ","): continue
                case UInt8(ascii: "}"): return
                default: throw corrupted("expected ',' or '}' in an object")
                }
            }
        }

        /// Reads an array, each element by `element`.
        mutating func array<Element>(_ element: (inout Reader) throws -> Element) throws -> [Element] {
            try expect(UInt8(ascii: "["), "an array")
            var elements: [Element] = []
            skipSpace()
            if peek() == UInt8(ascii: "]") {
                index += 1
                return elements
            }
            while true {
                skipSpace()
                do {
                    elements.append(try element(&self))
                } catch let error as DecodingError {
                    throw Self.prefixed(error, SyncJSONPathKey(intValue: elements.count))
                }
                skipSpace()
                switch next() {
                case UInt8(ascii: ","): continue
                case UInt8(ascii: "]"): return elements
                default: throw corrupted("expected ',' or ']' in an array")
                }
            }
        }

        /// Whether the value here is `null` (read if so).
        mutating func null() throws -> Bool {
            guard peek() == UInt8(ascii: "n") else { return false }
            try literal("null")
            return true
        }

        /// Skips any value (a member this reader does not know, as `JSONDecoder` skips
        /// one), nested at most 64 deep.
        mutating func skipValue(depth: Int = 0) throws {
            guard depth < 64 else { throw corrupted("values nested more than 64 deep") }
            switch peek() {
            case UInt8(ascii: "{"): try object { reader, _ in try reader.skipValue(depth: depth + 1) }
            case UInt8(ascii: "["): _ = try array { reader in try reader.skipValue(depth: depth + 1) }
            case UInt8(ascii: "\""): _ = try string()
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            default: _ = try numberText()
            }
        }

        // MARK: Scalars

        /// A JSON number that is an integer of 64 bits, read exactly ("1.0" and "27e2" too,
        /// as `JSONDecoder` reads them; not through a double, which would round).
        mutating func integer() throws -> Int64 {
            let (text, integral) = try numberText()
            if integral, let value = Int64(text) { return value }
            guard !integral, let value = Self.exactInteger(text) else { throw corrupted("the number \(text) is not an integer of 64 bits") }
            return value
        }

        /// `text` (a JSON number with a fraction or an exponent) as an integer, when it is one.
        static func exactInteger(_ text: String) -> Int64? {
            let negative = text.hasPrefix("-")
            let parts = text.drop { $0 == "-" }.split(omittingEmptySubsequences: false) { $0 == "e" || $0 == "E" }
            guard let mantissa = parts.first, parts.count <= 2 else { return nil }
            let exponent = parts.count == 2 ? Int(parts[1]) : 0
            let halves = mantissa.split(separator: ".", omittingEmptySubsequences: false)
            guard let exponent, let whole = halves.first else { return nil }
            let fraction = halves.count > 1 ? halves[1] : ""
            // digits × 10^shift.
            var digits = String(whole + fraction).drop { $0 == "0" }
            guard !digits.isEmpty else { return 0 }
            let shift = exponent - fraction.count
            if shift < 0 {
                let dropped = digits.suffix(min(-shift, digits.count))
                guard dropped.allSatisfy({ $0 == "0" }) else { return nil }
                digits = digits.dropLast(-shift)
                if digits.isEmpty { return nil }
            } else {
                guard digits.count + shift <= 19 else { return nil }
                digits += String(repeating: "0", count: shift)
            }
            return Int64((negative ? "-" : "") + digits)
        }

        /// A JSON number as a double.
        mutating func real() throws -> Double {
            let (text, _) = try numberText()
            // Neither overflowing to infinity nor underflowing to zero (as `JSONDecoder`).
            let underflow = { text.prefix { $0 != "e" && $0 != "E" }.contains { ("1"..."9").contains($0) } }
            guard let value = Double(text), value.isFinite, value != 0 || !underflow() else {
                throw corrupted("the number \(text) does not fit in a double")
            }
            return value
        }

        /// A JSON string.
        mutating func string() throws -> String {
            try expect(UInt8(ascii: "\""), "a string")
            let start = index
            // Most strings have nothing escaped: their bytes are the string's UTF-8.
            var high: UInt8 = 0
            while index < bytes.count {
                let byte = bytes[index]
                high |= byte
                if byte == UInt8(ascii: "\"") {
                    let text = try utf8(start..<index, ascii: high < 0x80)
                    index += 1
                    return text
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
                index += 1
            }
            var buffer = Array(bytes[start..<index])
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return try buffer.withUnsafeBytes { raw in
                        guard let text = String(validating: raw, as: UTF8.self) else { throw corrupted("a string is not valid UTF-8") }
                        return text
                    }
                case UInt8(ascii: "\\"):
                    try unescape(into: &buffer)
                case ..<0x20:
                    throw corrupted("a control character in a string must be escaped")
                default:
                    buffer.append(byte)
                }
            }
            throw corrupted("a string is not closed")
        }

        private mutating func unescape(into buffer: inout [UInt8]) throws {
            switch next() {
            case UInt8(ascii: "\""): buffer.append(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): buffer.append(UInt8(ascii: "\\"))
            case UInt8(ascii: "/"): buffer.append(UInt8(ascii: "/"))
            case UInt8(ascii: "b"): buffer.append(0x08)
            case UInt8(ascii: "f"): buffer.append(0x0C)
            case UInt8(ascii: "n"): buffer.append(0x0A)
            case UInt8(ascii: "r"): buffer.append(0x0D)
            case UInt8(ascii: "t"): buffer.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800..<0xDC00).contains(scalar) {
                    // A high surrogate: a low one must follow.
                    guard next() == UInt8(ascii: "\\"), next() == UInt8(ascii: "u"), case let low = try hex4(), (0xDC00..<0xE000).contains(low) else {
                        throw corrupted("an escaped high surrogate without its low surrogate")
                    }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let unicode = Unicode.Scalar(scalar) else { throw corrupted("an escaped lone surrogate") }
                buffer.append(contentsOf: String(Character(unicode)).utf8)
            default:
                throw corrupted("an unknown escape in a string")
            }
        }

        private mutating func hex4() throws -> UInt32 {
            var value: UInt32 = 0
            for _ in 0..<4 {
                let digit: UInt32
                switch next() {
                case let byte? where (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte): digit = UInt32(byte - UInt8(ascii: "0"))
                case let byte? where (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case let byte? where (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: throw corrupted("\\u takes four hexadecimal digits")
                }
                value = value << 4 | digit
            }
            return value
        }

        /// The text of a number, checked against JSON's grammar, and whether it has neither
        /// fraction nor exponent.
        private mutating func numberText() throws -> (String, integral: Bool) {
            let start = index
            if peek() == UInt8(ascii: "-") { index += 1 }
            guard let first = peek(), isDigit(first) else { throw corrupted("expected a value") }
            index += 1
            if first != UInt8(ascii: "0") { skipDigits() }
            var integral = true
            if peek() == UInt8(ascii: ".") {
                index += 1
                guard let digit = peek(), isDigit(digit) else { throw corrupted("a number's '.' needs digits after it") }
                skipDigits()
                integral = false
            }
            if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
                index += 1
                if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
                guard let digit = peek(), isDigit(digit) else { throw corrupted("a number's exponent needs digits") }
                skipDigits()
                integral = false
            }
            return (try utf8(start..<index, ascii: true), integral)
        }

        private func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

        private mutating func skipDigits() {
            while let byte = peek(), isDigit(byte) { index += 1 }
        }

        private mutating func literal(_ word: StaticString) throws {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count,
                  word.withUTF8Buffer({ expected in (0..<count).allSatisfy { bytes[index + $0] == expected[$0] } }) else {
                throw corrupted("expected \(word)")
            }
            index += count
        }

        // MARK: Bytes

        /// The string of the bytes in `range`, refused when they are not UTF-8. `ascii`: the
        /// caller saw no byte above 0x7F, so they are UTF-8 as they are and `String(decoding:)`
        /// makes the string (about five times as fast as `String(validating:)` for short
        /// strings, which most keys and values are).
        private func utf8(_ range: Range<Int>, ascii: Bool) throws -> String {
            let raw = UnsafeRawBufferPointer(rebasing: bytes[range])
            if ascii { return String(decoding: raw, as: UTF8.self) }
            guard let text = String(validating: raw, as: UTF8.self) else {
                throw corrupted("a string is not valid UTF-8")
            }
            return text
        }

        mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x0A, 0x0D, 0x09: index += 1
                default: return
                }
            }
        }

        func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

        private mutating func next() -> UInt8? {
            guard index < bytes.count else { return nil }
            defer { index += 1 }
            return bytes[index]
        }

        private mutating func expect(_ byte: UInt8, _ what: String) throws {
            guard next() == byte else { throw corrupted("expected \(what)") }
        }

        // MARK: Errors

        func corrupted(_ message: String) -> DecodingError {
            .dataCorrupted(DecodingError.Context(codingPath: [], debugDescription: "\(message) (byte \(index))"))
        }

        func missing(_ key: String) -> DecodingError {
            .keyNotFound(SyncJSONPathKey(stringValue: key), DecodingError.Context(codingPath: [], debugDescription: "no value for '\(key)'"))
        }

        /// `error` with `key` in front of its path.
        static func prefixed(_ error: DecodingError, _ key: SyncJSONPathKey) -> DecodingError {
            func context(_ context: DecodingError.Context) -> DecodingError.Context {
                DecodingError.Context(codingPath: [key] + context.codingPath, debugDescription: context.debugDescription, underlyingError: context.underlyingError)
            }
            switch error {
            case .dataCorrupted(let inner): return .dataCorrupted(context(inner))
            case .keyNotFound(let missing, let inner): return .keyNotFound(missing, context(inner))
            case .typeMismatch(let type, let inner): return .typeMismatch(type, context(inner))
            case .valueNotFound(let type, let inner): return .valueNotFound(type, context(inner))
            @unknown default: return error
            }
        }
    }
}
