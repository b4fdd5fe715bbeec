import Foundation
import Testing
@testable import Sluice

/// The row hash a live query compares to tell whether a row changed: any
/// one-byte edit, a moved column boundary or a different seed changes it.
@Suite(.timeLimit(.minutes(10))) struct RowHasherTests {
    static func hash(_ columns: [[UInt8]], seed: Int = 7) -> Int {
        var hasher = RowHasher(seed: seed)
        for column in columns {
            column.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
        return hasher.finalize()
    }

    @Test func everyOneByteEditChangesTheHash() {
        var random = SeededRandom(seed: 11)
        var seen = Set<Int>()
        var inputs = 0
        for length in 0..<40 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            let original = Self.hash([bytes])
            seen.insert(original)
            inputs += 1
            for index in bytes.indices {
                for delta: UInt8 in [1, 0x80] {
                    var edited = bytes
                    edited[index] &+= delta
                    let changed = Self.hash([edited])
                    #expect(changed != original, "length \(length), byte \(index) + \(delta)")
                    seen.insert(changed)
                    inputs += 1
                }
            }
            // A trailing zero byte is not padding: the length is hashed too.
            #expect(Self.hash([bytes + [0]]) != original)
        }
        #expect(seen.count == inputs, "\(inputs) distinct inputs, \(seen.count) distinct hashes")
    }

    @Test func columnBoundariesAndSeedsCount() {
        let abc = Array("abc".utf8)
        #expect(Self.hash([Array(abc[..<1]), Array(abc[1...])]) != Self.hash([Array(abc[..<2]), Array(abc[2...])]))
        #expect(Self.hash([abc, []]) != Self.hash([abc]))
        #expect(Self.hash([abc], seed: 1) != Self.hash([abc], seed: 2))
        #expect(Self.hash([abc]) == Self.hash([abc]))
        var words = RowHasher(seed: 0), swapped = RowHasher(seed: 0)
        words.combine(1); words.combine(2)
        swapped.combine(2); swapped.combine(1)
        #expect(words.finalize() != swapped.finalize(), "order matters")
    }
}
