import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice

/// Swift's comparator must order values exactly as SQLite's ORDER BY.
@Suite(.timeLimit(.minutes(10))) struct SortOrderTests {
    static let texts = ["", " ", "a", "A", "a ", "b", "B", "ab", "aB", "Ab", "z", "é", "e\u{301}", "É", "ß", "ss", "Ω", "李", "🚀",
                        "Zoë", "zoe", "ZOË", "Ødegaard", "o", "10", "9", "a\u{0}b", "a  ",
                        // Around the 15 bytes a sort key holds inline.
                        "abcdefghijklmn", "abcdefghijklmno", "abcdefghijklmnop", "abcdefghijklmno\u{0}", "abcdefghijklmnO",
                        "ABCDEFGHIJKLMNOP", "abcdefghijklmno ", "abcdefghijklmnö"]
    static let values: [SQLiteValue] = [.null, .integer(0), .integer(-1), .integer(Int64.max), .integer(Int64.min), .integer(3),
                                        .real(2.5), .real(3.0), .real(-0.0), .real(1e300), .real(-1e300), .real(9.223372036854776e18),
                                        .blob(Data()), .blob(Data([0])), .blob(Data([1, 2])), .blob(Data([255]))]
        + texts.map { .text($0) }

    @Test(arguments: ["BINARY", "NOCASE", "RTRIM"], [false, true])
    func swiftOrderMatchesSQLiteOrderBy(collation: String, descending: Bool) throws {
        let store = try TemporaryDatabase().store()
        try store.write { tx in
            try tx.execute(script: "CREATE TABLE t (id INTEGER PRIMARY KEY, v COLLATE \(collation))")
            for (index, value) in Self.values.enumerated() {
                try tx.execute(sql: "INSERT INTO t (id, v) VALUES (?, ?)", arguments: [.integer(Int64(index + 1)), value])
            }
        }
        let sqliteOrder = try store.read { db in
            try db.fetchRows(sql: "SELECT id FROM t ORDER BY v \(descending ? "DESC" : "ASC"), id").compactMap { Int64(sqliteValue: $0[0]) }
        }
        let collationValue = try #require(SortOrder.Collation(name: collation))
        let order = SortOrder(terms: [.init(descending: descending, collation: collationValue), .init(descending: false, collation: .binary)])
        let keys = Self.values.enumerated().map { index, value in
            SortKey(first: value, rest: [.integer(Int64(index + 1))], rowID: Int64(index + 1))
        }
        let swiftOrder = keys.sorted(by: order.less).map(\.rowID)
        #expect(swiftOrder == sqliteOrder)
    }

    /// Inline and heap bytes order as memcmp-then-length, over random byte strings of 0–20 bytes.
    @Test func sortBytesOrderLikeMemcmp() {
        var random = SeededRandom(seed: 11)
        let samples = (0..<400).map { _ in (0..<Int(random.next() % 21)).map { _ in [0, 1, 0x41, 0x61, 0x7F, 0x80, 0xFF][Int(random.next() % 7)] as UInt8 } }
        for x in samples {
            for y in samples.prefix(60) {
                let expected = x.withUnsafeBufferPointer { a in y.withUnsafeBufferPointer { b in SortOrder.compareBytes(a, b) } }
                #expect(SortBytes.compare(SortBytes(x), SortBytes(y)) == expected)
                #expect((SortBytes(x) == SortBytes(y)) == (x == y))
                #expect(SortBytes(x).withBytes { Array($0) } == x)
            }
        }
    }

    @Test func integerAgainstRealIsExact() {
        #expect(SortOrder.compare(integer: 9_007_199_254_740_993, real: 9_007_199_254_740_992.0) == 1)
        #expect(SortOrder.compare(integer: 3, real: 3.0) == 0)
        #expect(SortOrder.compare(integer: 3, real: 3.5) == -1)
        #expect(SortOrder.compare(integer: -3, real: -3.5) == 1)
        #expect(SortOrder.compare(integer: Int64.max, real: 1e300) == -1)
        #expect(SortOrder.compare(integer: Int64.min, real: -1e300) == 1)
    }
}
