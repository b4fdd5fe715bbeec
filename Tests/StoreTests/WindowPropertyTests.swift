import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

/// After every commit, the previous window with the changeset applied equals
/// the window re-queried on a plain connection, and its position and count
/// are the re-queried ones: over random workloads, for windows of every
/// kind, for commits by this store, another connection, the sqlite3 shell
/// (another process), tracked by the change log's triggers or not.
@Suite(.timeLimit(.minutes(10)), .serialized) struct WindowPropertyTests {
    typealias Writer = ChangesetPropertyTests.Writer

    /// A window observed, rebuilt from its changesets only, and how to re-query it.
    final class WindowMirror<Element: Sendable> {
        let name: String
        let recorder: ChangeRecorder<Element>
        let id: (Element) -> Int64
        /// The rows of the whole result, in order (ids), on a plain connection.
        let orderSQL: String
        /// The cut's place among those rows (the number before it), on a plain connection.
        let cutPosition: (PlainConnection, Int) throws -> Int
        let before: Int
        let after: Int
        var array: [Element] = []
        var position: WindowPosition?

        init(_ name: String, _ results: Results<Element>, _ window: ResultsWindow, id: @escaping (Element) -> Int64, orderSQL: String,
             cutPosition: @escaping (PlainConnection, Int) throws -> Int) {
            self.name = name
            self.id = id
            self.orderSQL = orderSQL
            self.cutPosition = cutPosition
            before = window.before
            after = window.after
            recorder = ChangeRecorder(results.window(window))
        }

        func check(_ plain: PlainConnection, commits: Int, _ context: String) throws {
            let events = recorder.take()
            #expect(events.count <= commits + 1, "\(name): \(events.count) events for \(commits) commit(s) (\(context))")
            for event in events {
                if case .error(let error) = event { Issue.record("\(name): \(error) (\(context))") }
                event.apply(to: &array)
                position = event.results?.window ?? position
            }
            let all = try plain.rows(orderSQL).compactMap { Int64(sqliteValue: $0[0]) }
            let cut = try cutPosition(plain, all.count)
            let start = Swift.max(0, cut - before)
            let expected = Array(all[start..<Swift.min(all.count, cut + after)])
            #expect(array.map(id) == expected, "\(name) (\(context))")
            #expect(position == WindowPosition(offset: start, totalCount: all.count), "\(name) position (\(context))")
        }
    }

    /// The number of rows of `rowsSQL` (columns: the sort values, then the id) before a cut at `values`.
    /// `inclusive`: the row with those values is after the cut. Computed by SQLite's own ORDER BY,
    /// with the cut as a row of its own among the others.
    static func cutPosition(_ plain: PlainConnection, rowsSQL: String, columns: [String], order: String, values: [SQLiteValue], inclusive: Bool) throws -> Int {
        let literals = values.map { Workload.Statement.literal($0) }
        let cutRow = "SELECT " + zip(literals, columns + ["id"]).map { "\($0) AS \($1)" }.joined(separator: ", ") + ", 1 AS __cut"
        let sql = "SELECT n FROM (SELECT __cut, row_number() OVER (ORDER BY \(order), __cut \(inclusive ? "DESC" : "ASC")) - 1 AS n "
            + "FROM (SELECT \((columns + ["id"]).joined(separator: ", ")), 0 AS __cut FROM (\(rowsSQL)) UNION ALL \(cutRow))) WHERE __cut = 1"
        return Int(try plain.rows(sql).first.flatMap { Int64(sqliteValue: $0[0]) } ?? 0)
    }

    /// A window anchored at the row in the middle of `rowsSQL`'s result, and how to place its cut later.
    static func anchored(_ plain: PlainConnection, rowsSQL: String, columns: [String], order: String,
                         inclusive: Bool) throws -> (id: Int64, position: (PlainConnection, Int) throws -> Int) {
        let rows = try plain.rows("SELECT \((columns + ["id"]).joined(separator: ", ")) FROM (\(rowsSQL)) ORDER BY \(order)")
        let anchor = rows[rows.count / 2]
        let id = Int64(sqliteValue: anchor[columns.count]) ?? 0
        return (id, { plain, _ in try cutPosition(plain, rowsSQL: rowsSQL, columns: columns, order: order, values: anchor, inclusive: inclusive) })
    }

    @Test(arguments: [(Writer.own, 200, UInt64(11)), (.ownBursts, 200, 12), (.otherConnection, 80, 13), (.sqliteShell, 50, 14),
                      (.trackedOtherConnection, 80, 15), (.trackedShell, 50, 16)])
    func applyingAWindowsChangesetsEqualsReQueryingIt(writer: Writer, transactions: Int, seed: UInt64) throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: DemoSchema.migrations)
        let tracked = writer == .trackedShell || writer == .trackedOtherConnection
        if tracked { try store.trackForeignWriters(tables: ["person"]) }
        var workload = Workload(seed: seed)
        for _ in 0..<25 { _ = try Writer.own.commitNext(&workload, store: store, other: nil, path: database.path) }
        let plain = PlainConnection(path: database.path)
        let all = store.objects(Person.self)
        let personID: (Person) -> Int64 = { $0.id ?? 0 }
        let adults = "SELECT * FROM person WHERE age >= 30"
        let byCity = try Self.anchored(plain, rowsSQL: "SELECT * FROM person", columns: ["city", "first_name"], order: "city, first_name, id", inclusive: true)
        let byAge = try Self.anchored(plain, rowsSQL: "SELECT * FROM person", columns: ["age"], order: "age, id", inclusive: false)
        let byName = try Self.anchored(plain, rowsSQL: adults, columns: ["last_name"], order: "last_name DESC, id", inclusive: true)
        let mirrors = [
            WindowMirror("first 5 by first name", all.sorted(byKeyPath: "first_name"), .first(5), id: personID,
                         orderSQL: "SELECT id FROM person ORDER BY first_name, id") { _, _ in 0 },
            WindowMirror("last 7 adults by age desc", try all.filter("age >= 30").sorted(by: [Ordering("age", descending: true), Ordering("last_name")]), .last(7),
                         id: personID, orderSQL: "SELECT id FROM person WHERE age >= 30 ORDER BY age DESC, last_name, id") { _, count in count },
            WindowMirror("6 from 4 by email", all.sorted(byKeyPath: "email"), .offset(4, count: 6), id: personID,
                         orderSQL: "SELECT id FROM person ORDER BY email, id") { _, count in Swift.min(4, count) },
            WindowMirror("around a row by city", all.sorted(by: [Ordering("city"), Ordering("first_name")]), .around(key: byCity.id, before: 3, after: 4),
                         id: personID, orderSQL: "SELECT id FROM person ORDER BY city, first_name, id", cutPosition: byCity.position),
            WindowMirror("after a row by age", all.sorted(byKeyPath: "age"), .after(key: byAge.id, count: 5), id: personID,
                         orderSQL: "SELECT id FROM person ORDER BY age, id", cutPosition: byAge.position),
            WindowMirror("before a row, adults by last name desc", try all.filter("age >= 30").sorted(by: [Ordering("last_name", descending: true)]),
                         .before(key: byName.id, count: 4), id: personID,
                         orderSQL: "SELECT id FROM person WHERE age >= 30 ORDER BY last_name DESC, id", cutPosition: byName.position),
        ]
        func check(_ context: String, commits: Int) throws {
            store.waitForObservers()
            store.waitForObservers()
            for mirror in mirrors { try mirror.check(plain, commits: commits, context) }
        }
        try check("initial", commits: 1)
        let other = writer == .otherConnection || writer == .trackedOtherConnection ? try Store(path: database.path) : nil
        for index in 0..<transactions {
            let statements = try writer.commitNext(&workload, store: store, other: other, path: database.path)
            if writer == .ownBursts, index % 10 != 9 { continue }
            try check("\(writer) transaction \(index): \(statements.map(\.sql))", commits: writer == .ownBursts ? 10 : 1)
        }
    }

    /// Values of every storage class in a column without affinity, text under
    /// NOCASE and RTRIM, NULLs, ties, and REPLACE: windows compare as SQLite does.
    @Test(arguments: [(Writer.own, UInt64(21)), (.sqliteShell, 22), (.trackedShell, 23)])
    func windowsOrderEveryStorageClassAsSQLiteDoes(writer: Writer, seed: UInt64) throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: [
            Migration(version: 1, name: "items", sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, v, w TEXT COLLATE NOCASE, r TEXT COLLATE RTRIM)"),
        ])
        if writer == .trackedShell { try store.trackForeignWriters(tables: ["item"]) }
        var random = SplitMix(seed: seed)
        let pool: [String] = ["NULL", "1", "1.0", "2.5", "-3", "'a'", "'A'", "'b '", "'b'", "'B  '", "x'00'", "x'ff01'", "''", "'10'", "9223372036854775807"]
        func value() -> String { pool[random.next(pool.count)] }
        func statement() -> String {
            let id = 1 + random.next(40)
            switch random.next(4) {
            case 0, 1: return "INSERT OR REPLACE INTO item (id, v, w, r) VALUES (\(id), \(value()), \(value()), \(value()))"
            case 2: return "UPDATE item SET \(["v", "w", "r"][random.next(3)]) = \(value()) WHERE id = \(id)"
            default: return "DELETE FROM item WHERE id = \(id)"
            }
        }
        func commit(_ statements: [String]) throws {
            if writer == .own {
                try store.write { tx in for sql in statements { try tx.execute(sql: sql) } }
            } else {
                try SQLiteShell.run(path: database.path, "BEGIN;\n" + statements.map { $0 + ";" }.joined(separator: "\n") + "\nCOMMIT;")
            }
        }
        for _ in 0..<10 { try store.write { tx in try tx.execute(sql: statement()) } }
        let plain = PlainConnection(path: database.path)
        let items = store.rows(in: "item")
        let id: (Row) -> Int64 = { Int64(sqliteValue: $0["id"] ?? .null) ?? 0 }
        let byW = try Self.anchored(plain, rowsSQL: "SELECT * FROM item", columns: ["w", "v"], order: "w DESC, v, id", inclusive: true)
        let mirrors = [
            WindowMirror("first 4 by v, w", items.sorted(by: [Ordering("v"), Ordering("w")]), .first(4), id: id,
                         orderSQL: "SELECT id FROM item ORDER BY v, w, id") { _, _ in 0 },
            WindowMirror("last 5 by r desc", items.sorted(by: [Ordering("r", descending: true)]), .last(5), id: id,
                         orderSQL: "SELECT id FROM item ORDER BY r DESC, id") { _, count in count },
            WindowMirror("around a row by w desc, v", items.sorted(by: [Ordering("w", descending: true), Ordering("v")]),
                         .around(key: byW.id, before: 2, after: 3), id: id, orderSQL: "SELECT id FROM item ORDER BY w DESC, v, id", cutPosition: byW.position),
            WindowMirror("5 from 3 by w", items.sorted(byKeyPath: "w"), .offset(3, count: 5), id: id,
                         orderSQL: "SELECT id FROM item ORDER BY w, id") { _, count in Swift.min(3, count) },
        ]
        func check(_ context: String) throws {
            store.waitForObservers()
            store.waitForObservers()
            for mirror in mirrors { try mirror.check(plain, commits: 1, context) }
        }
        try check("initial")
        for index in 0..<60 {
            let statements = (0..<(1 + random.next(3))).map { _ in statement() }
            try commit(statements)
            try check("\(writer) transaction \(index): \(statements)")
        }
    }

    /// Windows grown, shrunk and moved while commits come: whatever was asked, the rows held are
    /// always a run of the re-queried result, at the offset the snapshot reports, and the count is
    /// the result's. Also a table whose identity is a TEXT primary key (rows replaced keep it).
    @Test(arguments: [(Writer.own, UInt64(31)), (.sqliteShell, 32), (.trackedOtherConnection, 33)])
    func resizedWindowsStayARunOfTheResult(writer: Writer, seed: UInt64) throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: DemoSchema.migrations + [
            Migration(version: 100, name: "tags", sql: "CREATE TABLE tag (code TEXT PRIMARY KEY, weight INTEGER)"),
        ])
        if writer == .trackedOtherConnection { try store.trackForeignWriters(tables: ["person", "tag"]) }
        var workload = Workload(seed: seed)
        var random = SplitMix(seed: seed)
        for _ in 0..<25 { _ = try Writer.own.commitNext(&workload, store: store, other: nil, path: database.path) }
        let plain = PlainConnection(path: database.path)
        struct Followed {
            let name: String
            let recorder: ChangeRecorder<Row>
            let orderSQL: String
            var array: [Row] = []
            var position: WindowPosition?
        }
        func follow(_ name: String, _ results: Results<Row>, _ window: ResultsWindow, _ orderSQL: String) -> Followed {
            Followed(name: name, recorder: ChangeRecorder(results.window(window)), orderSQL: orderSQL)
        }
        let middle = try plain.rows("SELECT id FROM person ORDER BY city, id").dropFirst(12).first.flatMap { Int64(sqliteValue: $0[0]) } ?? 1
        var followed = [
            follow("last 5 by first name", store.rows(in: "person").sorted(byKeyPath: "first_name"), .last(5), "SELECT id FROM person ORDER BY first_name, id"),
            follow("first 4 by age desc", store.rows(in: "person").sorted(by: [Ordering("age", descending: true)]), .first(4),
                   "SELECT id FROM person ORDER BY age DESC, id"),
            follow("around a row by city", store.rows(in: "person").sorted(byKeyPath: "city"), .around(key: middle, before: 2, after: 2),
                   "SELECT id FROM person ORDER BY city, id"),
            follow("4 from 3 by email", store.rows(in: "person").sorted(byKeyPath: "email"), .offset(3, count: 4), "SELECT id FROM person ORDER BY email, id"),
            follow("tags by weight", store.rows(in: "tag").sorted(byKeyPath: "weight"), .last(3), "SELECT code FROM tag ORDER BY weight, code, rowid"),
        ]
        let other = writer == .trackedOtherConnection ? try Store(path: database.path) : nil
        func tagStatement() -> String {
            let code = "'t\(random.next(12))'"
            switch random.next(3) {
            case 0: return "INSERT OR REPLACE INTO tag (code, weight) VALUES (\(code), \(random.next(6)))"
            case 1: return "UPDATE tag SET weight = \(random.next(6)) WHERE code = \(code)"
            default: return "DELETE FROM tag WHERE code = \(code)"
            }
        }
        for index in 0..<80 {
            let statements = try writer.commitNext(&workload, store: store, other: other, path: database.path)
            let tag = tagStatement()
            switch writer {
            case .sqliteShell: try SQLiteShell.run(path: database.path, tag + ";")
            case .trackedOtherConnection: try other?.write { tx in try tx.execute(sql: tag) }
            default: try store.write { tx in try tx.execute(sql: tag) }
            }
            // Now and then, a request to one window.
            if random.next(3) == 0 {
                let handle = followed[random.next(followed.count)].recorder.token?.window
                let edge: WindowEdge = random.next(2) == 0 ? .start : .end
                switch random.next(5) {
                case 0, 1: handle?.loadMore(at: edge, count: 1 + random.next(3))
                case 2, 3: handle?.shrink(at: edge, count: 1 + random.next(2))
                default: handle?.move(to: random.next(2) == 0 ? .offset(random.next(20), count: 1 + random.next(5)) : .last(1 + random.next(5)))
                }
            }
            store.waitForObservers()
            store.waitForObservers()
            for position in followed.indices {
                for event in followed[position].recorder.take() {
                    if case .error(let error) = event { Issue.record("\(followed[position].name): \(error)") }
                    event.apply(to: &followed[position].array)
                    followed[position].position = event.results?.window ?? followed[position].position
                }
                let window = followed[position]
                let all = try plain.rows(window.orderSQL).map(\.[0])
                let keyColumn = window.name.hasPrefix("tags") ? "code" : "id"
                let held = window.array.map { $0[keyColumn] ?? .null }
                let offset = window.position?.offset ?? -1
                let context = "\(window.name), \(writer) transaction \(index): \(statements.map(\.sql)) + \(tag)"
                #expect(window.position?.totalCount == all.count, "\(context): count")
                #expect(offset >= 0 && offset + held.count <= all.count && Array(all[offset..<(offset + held.count)]) == held,
                        "\(context): \(held) at \(offset) is not a run of \(all)")
            }
        }
    }

    /// In a UTF-16 database the cut's text is bound and compared as the stored bytes' order, which
    /// differs from UTF-8's (surrogate pairs, an embedded NUL): windows stay exact runs of the result.
    @Test(arguments: ["UTF-16le", "UTF-16be", "UTF-8"])
    func windowsFollowTheStoredEncodingsOrder(encoding: String) throws {
        let database = TemporaryDatabase()
        try SQLiteShell.run(path: database.path, "PRAGMA encoding = '\(encoding)'; CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT, rank INTEGER);")
        let names = TextEncodingTests.names
        let plain = PlainConnection(path: database.path)
        let store = try Store(path: database.path)
        try store.write { tx in
            for (index, name) in names.enumerated() {
                try tx.execute(sql: "INSERT INTO item VALUES (?, ?, 0)", arguments: [.integer(Int64(index + 1)), .text(name)])
            }
        }
        let items = store.rows(in: "item").sorted(byKeyPath: "name")
        let windows: [(String, ChangeRecorder<Row>, (Int) -> Int?)] = [
            ("around 😀", ChangeRecorder(items.window(.around(key: 5, before: 2, after: 2))), { _ in nil }),
            ("from 3", ChangeRecorder(items.window(.offset(3, count: 4))), { _ in 3 }),
            ("last 3", ChangeRecorder(items.window(.last(3))), { count in Swift.max(0, count - 3) }),
        ]
        var arrays = [[Row]](repeating: [], count: windows.count)
        var positions = [WindowPosition?](repeating: nil, count: windows.count)
        func check(_ context: String) throws {
            store.waitForObservers()
            store.waitForObservers()
            let all = try plain.rows("SELECT id FROM item ORDER BY name, id").map(\.[0])
            for (index, window) in windows.enumerated() {
                for event in window.1.take() {
                    event.apply(to: &arrays[index])
                    positions[index] = event.results?.window ?? positions[index]
                }
                let held = arrays[index].map { $0["id"] ?? .null }
                let offset = positions[index]?.offset ?? -1
                #expect(positions[index]?.totalCount == all.count, "\(window.0) \(context): count")
                #expect(offset >= 0 && offset + held.count <= all.count && Array(all[offset..<(offset + held.count)]) == held, "\(window.0) \(context)")
                if let expected = window.2(all.count) { #expect(offset == expected, "\(window.0) \(context): offset") }
            }
        }
        try check("first")
        for (id, name) in [(1, "\u{FF5F}"), (6, "b"), (3, "😀!"), (2, "a\u{0}"), (11, "\u{E001}"), (12, "z\u{0}a")] {
            try store.write { tx in try tx.execute(sql: "UPDATE item SET name = ?, rank = rank + 1 WHERE id = ?", arguments: [.text(name), .integer(Int64(id))]) }
            try check("after renaming \(id) to \(name.debugDescription)")
        }
        try store.write { tx in try tx.execute(sql: "INSERT INTO item VALUES (20, ?, 0), (21, ?, 0)", arguments: [.text("😀"), .text("\u{FF5E}")]) }
        try check("after two inserts")
        try plain.execute("DELETE FROM item WHERE id IN (4, 9)")
        try check("after the shell's delete")
    }
}
