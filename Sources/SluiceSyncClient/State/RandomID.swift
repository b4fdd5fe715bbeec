import Foundation

/// New global and device ids: UUIDs in lower case, as `UUID().uuidString.lowercased()`
/// spells them. Foundation's `UUID()` on Linux opens and reads `/dev/urandom` for each one
/// (a first upload of 100,000 rows opened it 100,000 times); the system generator here
/// (`getrandom`, `arc4random_buf` on Apple platforms) opens nothing.
enum RandomID {
    /// A random (version 4) UUID: a device's id.
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        // Version 4 (random) in the high word, the RFC 4122 variant in the low one, as UUID() sets them.
        let high = (generator.next() as UInt64) & ~0xF000 | 0x4000
        return spell(high: high, low: variant(generator.next()))
    }

    /// A time-ordered (version 7, RFC 9562) UUID: a row's global id. The first 48 bits are
    /// the milliseconds since 1970, the rest random (74 bits), so ids made one after another
    /// sort together and the indexes that hold them (the device's identity map, the
    /// service's rows) grow at one end instead of everywhere: inserting a first upload's
    /// 275,000 ids into the identity map's index took about a third less time so (2026-12-06).
    /// An id tells when its row was first given one, to the millisecond.
    static func timeOrdered(now milliseconds: UInt64 = UInt64(max(0, Date().timeIntervalSince1970 * 1_000))) -> String {
        var generator = SystemRandomNumberGenerator()
        let random = generator.next() as UInt64
        let high = (milliseconds & 0xFFFF_FFFF_FFFF) << 16 | 0x7000 | (random & 0x0FFF)
        return spell(high: high, low: variant(generator.next()))
    }

    /// The RFC 4122 variant in the top bits of the low word.
    private static func variant(_ word: UInt64) -> UInt64 { word & ~(0xC000 << 48) | (0x8000 << 48) }

    /// 8-4-4-4-12 hexadecimal digits.
    private static func spell(high: UInt64, low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            var index = 0
            for digit in 0..<32 {
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
