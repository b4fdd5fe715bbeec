/// Writes the change log's JSON (see `LogValues`) into raw bytes: the one
/// writer behind both the Swift encoder (updates and deletes) and the
/// `sluice_log_object` SQL function (bulk inserts, temporary triggers), so
/// both give the same text.
///
/// A `sluice_log_object` buffer is reused by every call on its connection
/// (used on that connection's queue only).
final class LogJSON {
    private(set) var base: UnsafeMutablePointer<UInt8>
    private var capacity = 1024
    private(set) var count = 0

    init() { base = .allocate(capacity: 1024) }
    deinit { base.deallocate() }

    /// What was written.
    var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    /// Starts over, keeping the room.
    func removeAll() { count = 0 }

    /// Makes room for `extra` more bytes.
    func reserve(_ extra: Int) {
        guard count + extra > capacity else { return }
        let grown = max(capacity * 2, count + extra)
        let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
        larger.update(from: base, count: count)
        base.deallocate()
        base = larger
        capacity = grown
    }

    func append(_ byte: UInt8) {
        reserve(1)
        appendReserved(byte)
    }

    /// Appends bytes as they are.
    func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        reserve(bytes.count)
        (base + count).update(from: source, count: bytes.count)
        count += bytes.count
    }

    private func appendLiteral(_ text: StaticString) {
        text.withUTF8Buffer { append($0) }
    }

    private func appendReserved(_ byte: UInt8) {
        base[count] = byte
        count += 1
    }

    // MARK: - Values

    /// A value: an integer, a real that reads back as a real, a string, a
    /// blob as `{"$blob":"<hex>"}`, null.
    func append(_ value: SQLiteValue) {
        switch value {
        case .null: appendNull()
        case .integer(let integer): appendInteger(integer)
        case .real(let double): appendReal(double)
        case .text(let text): appendString(text)
        case .blob(let data): data.withUnsafeBytes { appendBlob($0) }
        }
    }

    func appendNull() { appendLiteral("null") }

    func appendInteger(_ integer: Int64) {
        reserve(20)
        if integer < 0 { appendReserved(UInt8(ascii: "-")) }
        // Digits of the magnitude, most significant first (Int64.min's magnitude fits a UInt64).
        var magnitude = integer.magnitude
        var unit: UInt64 = 1
        var digits = 1
        while magnitude / unit >= 10 { unit *= 10; digits += 1 }
        for _ in 0..<digits {
            appendReserved(UInt8(ascii: "0") + UInt8(magnitude / unit))
            magnitude %= unit
            unit /= 10
        }
    }

    /// A real as JSON that reads back as the same real (never as an
    /// integer): the shortest exact form, with `.0` when it has no point or
    /// exponent; infinities as `±9e999`.
    func appendReal(_ double: Double) {
        if double.isInfinite { return appendLiteral(double < 0 ? "-9e999" : "9e999") }
        if double.isNaN { return appendNull() }
        var text = "\(double)"
        if !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) { text += ".0" }
        text.withUTF8 { append($0) }
    }

    func appendBlob(_ blob: UnsafeRawBufferPointer) {
        reserve(2 * blob.count + 14)
        appendLiteral(#"{"$blob":""#)
        for byte in blob {
            appendReserved(Self.hexDigit(byte >> 4))
            appendReserved(Self.hexDigit(byte & 0xF))
        }
        appendLiteral(#""}"#)
    }

    func appendString(_ string: String) {
        var string = string
        string.withUTF8 { appendString(utf8: $0) }
    }

    /// A JSON string of UTF-8 text; runs without anything to escape are copied whole.
    func appendString(utf8 bytes: UnsafeBufferPointer<UInt8>) {
        reserve(6 * bytes.count + 2)    // every byte escaped as \u00XX at worst
        appendReserved(UInt8(ascii: "\""))
        var start = 0
        var index = Self.nextToEscape(in: bytes, from: 0)
        while index < bytes.count {
            append(UnsafeBufferPointer(rebasing: bytes[start..<index]))
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): appendReserved(UInt8(ascii: "\\")); appendReserved(byte)
            case 0x0A: appendLiteral(#"\n"#)
            case 0x0D: appendLiteral(#"\r"#)
            case 0x09: appendLiteral(#"\t"#)
            default:
                appendLiteral(#"\u00"#)
                appendReserved(Self.hexDigit(byte >> 4))
                appendReserved(Self.hexDigit(byte & 0xF))
            }
            start = index + 1
            index = Self.nextToEscape(in: bytes, from: start)
        }
        append(UnsafeBufferPointer(rebasing: bytes[start...]))
        appendReserved(UInt8(ascii: "\""))
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }

    /// The index of the first byte from `start` that JSON must escape (a
    /// control character, `"` or `\`), or the count. Eight bytes at a time.
    private static func nextToEscape(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var index = start
        if let base = bytes.baseAddress {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            while index + 8 <= bytes.count {
                let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
                // A byte below 0x20, or equal to '"' or '\', sets its high bit (the usual zero-byte test).
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
}

// A log buffer belongs to one connection's queue.
@available(*, unavailable)
extension LogJSON: Sendable {}
