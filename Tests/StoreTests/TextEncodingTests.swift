import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice

/// A UTF-16 database's BINARY order is its stored bytes' (UTF-16LE or BE),
/// which differs from UTF-8's: a live query follows SQLite's order across
/// inserts and updates; and string filters see text after an embedded NUL.
@Suite(.timeLimit(.minutes(10))) struct TextEncodingTests {
    /// Names whose UTF-8 and UTF-16 orders differ (a private-use or
    /// fullwidth character after an emoji's surrogates), an embedded NUL,
    /// and case and accent neighbours.
    static let names = ["a", "ā", "z", "\u{FF5E}", "😀", "Ωmega", "é", "e", "a\u{0}z", "李", "\u{E000}", "A"]

    @Test(arguments: ["UTF-16le", "UTF-16be", "UTF-8"], CommitPathTests.captures)
    func liveQueryFollowsTheStoredEncodingsOrder(encoding: String, capture: ChangeCapture) throws {
        let database = TemporaryDatabase()
        try SQLiteShell.run(path: database.path, "PRAGMA encoding = '\(encoding)'; CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT, rank INTEGER);")
        let plain = PlainConnection(path: database.path)
        let store = try Store(path: database.path, configuration: Store.Configuration(), capture: capture)
        let query = "SELECT * FROM item ORDER BY name, id"
        let mirror = CommitPathTests.RowMirror(store.rows(in: "item").sorted(byKeyPath: "name"))
        mirror.wait(for: 1)
        for (index, name) in Self.names.enumerated() {
            try store.write { tx in try tx.execute(sql: "INSERT INTO item VALUES (?, ?, 0)", arguments: [.integer(Int64(index + 1)), .text(name)]) }
            #expect(mirror.wait(until: try plain.rows(query)), "after inserting \(name.debugDescription)")
        }
        // Renames that cross the encodings' orders, with an unrelated column.
        for (id, name) in [(1, "\u{FF5F}"), (5, "b"), (3, "😀"), (2, "a\u{0}")] {
            try store.write { tx in
                try tx.execute(sql: "UPDATE item SET name = ?, rank = rank + 1 WHERE id = ?", arguments: [.text(name), .integer(Int64(id))])
            }
            #expect(mirror.wait(until: try plain.rows(query)), "after renaming \(id) to \(name.debugDescription)")
        }
        try plain.execute("UPDATE item SET name = 'ab' WHERE id = 4")
        #expect(mirror.wait(until: try plain.rows(query)))
        CommitPathTests.settle(store)
        let taken = mirror.take()
        #expect(taken.errors.isEmpty)
        #expect(taken.states.last == (try plain.rows(query)))
        #expect(taken.states.count == Self.names.count + 6, "one state per commit")
    }

    @Test(arguments: ["UTF-16le", "UTF-16be", "UTF-8"])
    func stringFiltersSeeTextAfterAnEmbeddedNUL(encoding: String) throws {
        let database = TemporaryDatabase()
        try SQLiteShell.run(path: database.path, "PRAGMA encoding = '\(encoding)'; CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT);")
        let store = try Store(path: database.path)
        try store.write { tx in
            for (index, name) in ["ab\u{0}cd", "abcd", "cd\u{0}ab", "x", "ab\u{0}", "AB\u{0}CD"].enumerated() {
                try tx.execute(sql: "INSERT INTO item VALUES (?, ?)", arguments: [.integer(Int64(index + 1)), .text(name)])
            }
            try tx.execute(sql: "INSERT INTO item VALUES (7, NULL)")
        }
        func ids(_ query: String, _ text: String) throws -> [Int64] {
            try store.rows(in: "item").filter(query, text).sorted(byKeyPath: "id").compactMap { Int64(sqliteValue: $0.values[0]) }
        }
        #expect(try ids("name CONTAINS $0", "cd") == [1, 2, 3])
        #expect(try ids("name CONTAINS $0", "\u{0}c") == [1])
        #expect(try ids("name CONTAINS[c] $0", "CD") == [1, 2, 3, 6])
        #expect(try ids("NOT (name CONTAINS $0)", "cd") == [4, 5, 6, 7], "NULL does not contain it")
        #expect(try ids("name BEGINSWITH $0", "ab\u{0}") == [1, 5])
        #expect(try ids("name BEGINSWITH $0", "ab") == [1, 2, 5])
        #expect(try ids("name BEGINSWITH[c] $0", "ab\u{0}c") == [1, 6])
        #expect(try ids("name ENDSWITH $0", "cd") == [1, 2])
        #expect(try ids("name ENDSWITH $0", "\u{0}") == [5])
        #expect(try ids("name ENDSWITH[c] $0", "\u{0}cD") == [1, 6])
        #expect(try ids("name ENDSWITH $0", "") == [1, 2, 3, 4, 5, 6])
        #expect(try ids("name CONTAINS $0", "") == [1, 2, 3, 4, 5, 6])
        // A live query with the filter delivers the row whose text after the NUL changes.
        let mirror = CommitPathTests.RowMirror(try store.rows(in: "item").filter("name CONTAINS $0", "zz").sorted(byKeyPath: "id"))
        mirror.wait(for: 1)
        try store.write { tx in try tx.execute(sql: "UPDATE item SET name = ? WHERE id = 4", arguments: [.text("x\u{0}zz")]) }
        #expect(mirror.wait(until: [[.integer(4), .text("x\u{0}zz")]]))
    }
}
