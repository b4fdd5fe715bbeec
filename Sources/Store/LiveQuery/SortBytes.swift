/// The bytes of a text or blob sort value: up to 15 bytes inline (most
/// names, codes and short titles), longer ones in an array.
///
/// A live query holds one sort key per row, and a million rows sorted by
/// name would otherwise hold a million small heap arrays (48 bytes each
/// with the allocator's header, beside the 8-byte reference).
struct SortBytes: Sendable, Hashable {
    private enum Storage: Sendable, Hashable {
        /// Bytes 0–14 in memory order across both words; byte 15 is the count.
        case inline(UInt64, UInt64)
        case heap(ContiguousArray<UInt8>)
    }

    private let storage: Storage

    static var inlineCapacity: Int { 15 }

    init(_ bytes: UnsafeRawBufferPointer) {
        if bytes.count <= Self.inlineCapacity {
            var words: (UInt64, UInt64) = (0, 0)
            withUnsafeMutableBytes(of: &words) { raw in
                if let base = bytes.baseAddress, bytes.count > 0 {
                    raw.baseAddress?.copyMemory(from: base, byteCount: bytes.count)
                }
                raw[15] = UInt8(bytes.count)
            }
            storage = .inline(words.0, words.1)
        } else {
            storage = .heap(ContiguousArray(bytes))
        }
    }

    init<S: Sequence<UInt8>>(_ bytes: S) {
        let array = ContiguousArray(bytes)
        self = array.withUnsafeBytes { SortBytes($0) }
    }

    /// Calls `body` with the bytes.
    func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        switch storage {
        case .inline(let low, let high):
            var words = (low, high)
            let count = Int(high >> 56)
            return try withUnsafeBytes(of: &words) { raw in
                try body(UnsafeBufferPointer(rebasing: raw.bindMemory(to: UInt8.self)[0..<count]))
            }
        case .heap(let array):
            return try array.withUnsafeBufferPointer(body)
        }
    }

    /// memcmp order, then length: -1, 0 or 1. Two inline values compare as
    /// two big-endian words each (unused bytes are zero and the count is
    /// the last byte, so a prefix sorts first).
    static func compare(_ a: SortBytes, _ b: SortBytes) -> Int {
        if case .inline(let a0, let a1) = a.storage, case .inline(let b0, let b1) = b.storage {
            let (x0, y0) = (UInt64(bigEndian: a0), UInt64(bigEndian: b0))
            if x0 != y0 { return x0 < y0 ? -1 : 1 }
            let (x1, y1) = (UInt64(bigEndian: a1), UInt64(bigEndian: b1))
            return x1 < y1 ? -1 : (x1 == y1 ? 0 : 1)
        }
        return a.withBytes { x in b.withBytes { y in SortOrder.compareBytes(x, y) } }
    }
}
