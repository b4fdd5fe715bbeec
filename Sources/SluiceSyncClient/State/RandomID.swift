/// New global and device ids: random (version 4) UUIDs in lower case, as
/// `UUID().uuidString.lowercased()` spells them. Foundation's `UUID()` on Linux opens and
/// reads `/dev/urandom` for each one (a first upload of 100,000 rows opened it 100,000
/// times); the system generator here (`getrandom`, `arc4random_buf` on Apple platforms)
/// opens nothing.
enum RandomID {
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        // Version 4 (random) in the high word, the RFC 4122 variant in the low one, as UUID() sets them.
        let high = (generator.next() as UInt64) & ~0xF000 | 0x4000
        let low = (generator.next() as UInt64) & ~(0xC000 << 48) | (0x8000 << 48)
        return String(unsafeUninitializedCapacity: 36) { buffer in
            var index = 0
            for digit in 0..<32 {
                // 8-4-4-4-12 digits.
                if digit == 8 || digit == 12 || digit == 16 || digit == 20 {
                    buffer[index] = UInt8(ascii: "-")
                    index += 1
                }
                let word = digit < 16 ? high : low
                let nibble = UInt8((word >> UInt64(4 * (15 - digit % 16))) & 0xF)
                buffer[index] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
                index += 1
            }
            return index
        }
    }
}
