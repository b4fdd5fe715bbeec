import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

/// Exact changeset sequences of windows (`Results.window`): rows entering
/// and leaving at the edges, moves inside, the count and the offset beside.
@Suite(.timeLimit(.minutes(10))) struct WindowTests {
    /// A table of ten messages, id 1…10 at t = 10, 20, … 100.
    final class Fixture {
        let store: Store
        let recorder: ChangeRecorder<Row>
        var ids: [Int64] = []
        var position: WindowPosition?

        init(_ window: ResultsWindow, filter: String? = nil, rows: Int = 10) throws {
            store = try TemporaryDatabase().store(migrations: [
                Migration(version: 1, name: "messages", sql: "CREATE TABLE msg (id INTEGER PRIMARY KEY, t INTEGER NOT NULL, body TEXT); CREATE INDEX msg_t ON msg (t)"),
            ])
            try store.write { tx in
                for id in 1...Int64(rows) { try tx.execute(sql: "INSERT INTO msg (id, t, body) VALUES (?, ?, ?)", arguments: [.integer(id), .integer(id * 10), .text(id % 2 == 0 ? "even" : "odd")]) }
            }
            var results = store.rows(in: "msg").sorted(byKeyPath: "t")
            if let filter { results = try results.filter(filter) }
            recorder = ChangeRecorder(results.window(window))
            _ = try take()
        }

        var handle: WindowHandle? { recorder.token?.window }

        /// Waits for delivery; returns the changesets (an empty one for a change of count or offset only).
        @discardableResult
        func take() throws -> [Changes] {
            store.waitForObservers()
            store.waitForObservers()   // the count runs on the queue after the first rows
            var changes: [Changes] = []
            for event in recorder.take() {
                if case .error(let error) = event { throw error }
                event.apply(to: &rowsHeld)
                ids = rowsHeld.compactMap { Int64(sqliteValue: $0["id"] ?? .null) }
                position = event.results?.window
                if let change = Changes(event) { changes.append(change) }
            }
            return changes
        }
        private(set) var rowsHeld: [Row] = []

        func write(_ sql: String) throws -> [Changes] {
            try store.write { tx in
                for statement in sql.split(separator: ";") { try tx.execute(sql: String(statement)) }
            }
            return try take()
        }
    }

    @Test func theLastRowsFollowAppendsEditsDeletesAndRowsCrossingTheEdge() throws {
        let window = try Fixture(.last(3))
        #expect(window.ids == [8, 9, 10])
        #expect(window.position == WindowPosition(offset: 7, totalCount: 10))

        // A message appended: it enters at the end, the oldest leaves.
        #expect(try window.write("INSERT INTO msg (id, t) VALUES (11, 110)") == [Changes(deletions: [0], insertions: [2])])
        #expect(window.ids == [9, 10, 11])
        #expect(window.position == WindowPosition(offset: 8, totalCount: 11))
        // An edit inside.
        #expect(try window.write("UPDATE msg SET body = 'edited' WHERE id = 10") == [Changes(modifications: [1])])
        // A delete inside: the row before the window comes in at its start.
        #expect(try window.write("DELETE FROM msg WHERE id = 10") == [Changes(deletions: [1], insertions: [0])])
        #expect(window.ids == [8, 9, 11])
        #expect(window.position == WindowPosition(offset: 7, totalCount: 10))
        // A row from far before the window moves past its end.
        #expect(try window.write("UPDATE msg SET t = 200 WHERE id = 2") == [Changes(deletions: [0], insertions: [2])])
        #expect(window.ids == [9, 11, 2])
        // A row inside moves inside: a move.
        #expect(try window.write("UPDATE msg SET t = 150 WHERE id = 9") == [Changes(deletions: [0], insertions: [1], moves: [[0, 1]])])
        #expect(window.ids == [11, 9, 2])
        // A change before the window: only the offset and count change.
        #expect(try window.write("DELETE FROM msg WHERE id = 1") == [Changes()])
        #expect(window.ids == [11, 9, 2])
        #expect(window.position == WindowPosition(offset: 6, totalCount: 9))
        // A change outside that changes nothing of the window or its position: nothing.
        #expect(try window.write("UPDATE msg SET body = 'x' WHERE id = 3") == [])
    }

    @Test func theFirstRowsTakeRowsSortedBeforeThem() throws {
        let window = try Fixture(.first(3))
        #expect(window.ids == [1, 2, 3])
        #expect(window.position == WindowPosition(offset: 0, totalCount: 10))
        #expect(try window.write("INSERT INTO msg (id, t) VALUES (11, 5)") == [Changes(deletions: [2], insertions: [0])])
        #expect(window.ids == [11, 1, 2])
        #expect(try window.write("DELETE FROM msg WHERE id IN (11, 1)") == [Changes(deletions: [0, 1], insertions: [1, 2])])
        #expect(window.ids == [2, 3, 4])
        #expect(window.position == WindowPosition(offset: 0, totalCount: 9))
    }

    @Test func anOffsetWindowKeepsItsPosition() throws {
        let window = try Fixture(.offset(2, count: 3))
        #expect(window.ids == [3, 4, 5])
        #expect(window.position == WindowPosition(offset: 2, totalCount: 10))
        // A row leaves before the window: the window shifts one row on.
        #expect(try window.write("DELETE FROM msg WHERE id = 1") == [Changes(deletions: [0], insertions: [2])])
        #expect(window.ids == [4, 5, 6])
        // Two rows enter before it: it shifts two rows back.
        #expect(try window.write("INSERT INTO msg (id, t) VALUES (11, 1), (12, 2)") == [Changes(deletions: [1, 2], insertions: [0, 1])])
        #expect(window.ids == [2, 3, 4])
        #expect(window.position == WindowPosition(offset: 2, totalCount: 11))
        // Past the end: empty, until rows come.
        let beyond = try Fixture(.offset(12, count: 3))
        #expect(beyond.ids == [])
        #expect(beyond.position == WindowPosition(offset: 10, totalCount: 10))
        #expect(try beyond.write("INSERT INTO msg (id, t) VALUES (11, 110), (12, 120), (13, 130)") == [Changes(insertions: [0])])
        #expect(beyond.ids == [13])
        #expect(beyond.position == WindowPosition(offset: 12, totalCount: 13))
    }

    /// Commits that land between the first rows and the count (the count runs on the queue after them) still move an offset window.
    @Test func anOffsetWindowShiftsForCommitsBeforeItsCount() throws {
        for round in 0..<20 {
            let store = try TemporaryDatabase().store(migrations: [
                Migration(version: 1, name: "messages", sql: "CREATE TABLE msg (id INTEGER PRIMARY KEY, t INTEGER NOT NULL)"),
            ])
            try store.write { tx in for id in 1...10 { try tx.execute(sql: "INSERT INTO msg (id, t) VALUES (?, ?)", arguments: [.integer(Int64(id)), .integer(Int64(id))]) } }
            let recorder = ChangeRecorder(store.rows(in: "msg").sorted(byKeyPath: "t").window(.offset(2, count: 3)))
            try store.write { tx in try tx.execute(sql: "DELETE FROM msg WHERE id = 1") }
            try store.write { tx in try tx.execute(sql: "INSERT INTO msg (id, t) VALUES (11, 100)") }
            store.waitForObservers()
            store.waitForObservers()
            var rows: [Row] = []
            var position: WindowPosition?
            for event in recorder.take() {
                event.apply(to: &rows)
                position = event.results?.window ?? position
            }
            #expect(rows.compactMap { Int64(sqliteValue: $0["id"] ?? .null) } == [4, 5, 6], "round \(round)")
            #expect(position == WindowPosition(offset: 2, totalCount: 10), "round \(round)")
        }
    }

    @Test func aWindowAroundARowKeepsItsPlaceWhenTheRowGoes() throws {
        let window = try Fixture(.around(key: 5, before: 2, after: 2))
        #expect(window.ids == [3, 4, 5, 6, 7])
        #expect(window.position == WindowPosition(offset: 2, totalCount: 10))
        #expect(try window.write("INSERT INTO msg (id, t) VALUES (11, 45)") == [Changes(deletions: [0], insertions: [1])])
        #expect(window.ids == [4, 11, 5, 6, 7])
        #expect(window.position == WindowPosition(offset: 3, totalCount: 11))
        // The anchor deleted: the cut stays at its place in the order.
        #expect(try window.write("DELETE FROM msg WHERE id = 5") == [Changes(deletions: [2], insertions: [4])])
        #expect(window.ids == [4, 11, 6, 7, 8])
        #expect(window.position == WindowPosition(offset: 3, totalCount: 10))

        let after = try Fixture(.after(key: 5, count: 2))
        #expect(after.ids == [6, 7])
        let before = try Fixture(.before(key: 5, count: 2))
        #expect(before.ids == [3, 4])
    }

    @Test func loadMoreShrinkAndMoveDeliverTheirChangesets() throws {
        let window = try Fixture(.last(3))
        let handle = try #require(window.handle)
        handle.loadMore(at: .start, count: 2)
        #expect(try window.take() == [Changes(insertions: [0, 1])])
        #expect(window.ids == [6, 7, 8, 9, 10])
        #expect(window.position == WindowPosition(offset: 5, totalCount: 10))
        handle.loadMore(at: .end, count: 2)   // already at the end: nothing
        #expect(try window.take() == [])
        // Scrolled up: the newest row goes, and new rows no longer come in.
        handle.shrink(at: .end, count: 1)
        #expect(try window.take() == [Changes(deletions: [4])])
        #expect(window.ids == [6, 7, 8, 9])
        #expect(try window.write("INSERT INTO msg (id, t) VALUES (11, 110)") == [Changes()])
        #expect(window.position == WindowPosition(offset: 5, totalCount: 11))
        handle.shrink(at: .start, count: 2)
        #expect(try window.take() == [Changes(deletions: [0, 1])])
        #expect(window.ids == [8, 9])
        handle.move(to: .offset(0, count: 2))
        #expect(try window.take() == [Changes(deletions: [0, 1], insertions: [0, 1])])
        #expect(window.ids == [1, 2])
        #expect(window.position == WindowPosition(offset: 0, totalCount: 11))
        // An offset window grown at its start moves its start back.
        handle.move(to: .offset(5, count: 2))
        _ = try window.take()
        handle.loadMore(at: .start, count: 2)
        #expect(try window.take() == [Changes(insertions: [0, 1])])
        #expect(window.ids == [4, 5, 6, 7])
        #expect(window.position == WindowPosition(offset: 3, totalCount: 11))
    }

    @Test func aFilteredWindowCountsOnlyItsRows() throws {
        let window = try Fixture(.last(2), filter: "body == 'even'")
        #expect(window.ids == [8, 10])
        #expect(window.position == WindowPosition(offset: 3, totalCount: 5))
        // A row leaves the filter, another enters it.
        #expect(try window.write("UPDATE msg SET body = 'odd' WHERE id = 10; UPDATE msg SET t = 140, body = 'even' WHERE id = 3") == [Changes(deletions: [1], insertions: [1])])
        #expect(window.ids == [8, 3])
        #expect(window.position == WindowPosition(offset: 3, totalCount: 5))
    }

    /// Another process adds a column and writes: the window plans again and keeps its rows in order.
    @Test func aWindowFollowsASchemaChangeByTheShell() throws {
        let window = try Fixture(.last(3))
        let path = try window.store.read { db in db.connection.path }
        // One commit: the new column and a row (the window plans again and counts again at once).
        try SQLiteShell.run(path: path, "BEGIN; ALTER TABLE msg ADD COLUMN extra TEXT; INSERT INTO msg (id, t, extra) VALUES (11, 110, 'x'); COMMIT;")
        _ = try window.take()
        #expect(window.ids == [9, 10, 11])
        #expect(window.rowsHeld.last?["extra"] == .text("x"), "rows read with the new column")
        #expect(window.position == WindowPosition(offset: 8, totalCount: 11))
        #expect(try window.write("DELETE FROM msg WHERE id = 10") == [Changes(deletions: [1], insertions: [0])])
        #expect(window.ids == [8, 9, 11])
    }

    /// A window filtered through a relationship: a recipient who moves brings their packages in or takes them out.
    @Test func aWindowFilteredThroughARelationshipFollowsTheRelatedRows() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        try store.write { tx in
            for (id, city) in [(1, "Oslo"), (2, "Rome"), (3, "Oslo")] as [(Int64, String)] {
                try tx.insert(Person(id: id, firstName: "p\(id)", lastName: "X", city: city))
            }
            for id in 1...9 { try tx.insert(Package(id: Int64(id), recipientID: Int64(1 + (id - 1) % 3), createdAt: start.addingTimeInterval(Double(id)))) }
        }
        let recorder = ChangeRecorder(try store.objects(Package.self).filter("recipient.city == 'Oslo'").sorted(byKeyPath: "created_at").window(.last(3)))
        var packages: [Package] = []
        var position: WindowPosition?
        func catchUp() -> [Changes] {
            store.waitForObservers()
            store.waitForObservers()
            var changes: [Changes] = []
            for event in recorder.take() {
                event.apply(to: &packages)
                position = event.results?.window ?? position
                if let change = Changes(event) { changes.append(change) }
            }
            return changes
        }
        _ = catchUp()
        // Oslo's packages: 1, 3, 4, 6, 7, 9 (recipients 1 and 3).
        #expect(packages.compactMap(\.id) == [6, 7, 9])
        #expect(position == WindowPosition(offset: 3, totalCount: 6))
        // Person 2 moves to Oslo: their packages 2, 5 and 8 join; 8 enters the window, 6 leaves.
        try store.write { tx in try tx.execute(sql: "UPDATE person SET city = 'Oslo' WHERE id = 2") }
        #expect(catchUp() == [Changes(deletions: [0], insertions: [1])])
        #expect(packages.compactMap(\.id) == [7, 8, 9])
        #expect(position == WindowPosition(offset: 6, totalCount: 9))
        // Person 3 leaves: their packages 3, 6 and 9 go; 9 leaves the window and 5 comes in at its start.
        try store.write { tx in try tx.execute(sql: "UPDATE person SET city = 'Rome' WHERE id = 3") }
        #expect(catchUp() == [Changes(deletions: [2], insertions: [0])])
        #expect(packages.compactMap(\.id) == [5, 7, 8])
        #expect(position == WindowPosition(offset: 3, totalCount: 6))
    }

    @Test func aWindowThatCannotBeReportsWhy() throws {
        let store = try TemporaryDatabase().store(migrations: [
            Migration(version: 1, name: "messages", sql: "CREATE TABLE msg (id INTEGER PRIMARY KEY, t INTEGER NOT NULL)"),
        ])
        let missing = ChangeRecorder(store.rows(in: "msg").sorted(byKeyPath: "t").window(.around(key: 42, before: 1, after: 1)))
        let limited = ChangeRecorder(store.rows(in: "msg").sorted(byKeyPath: "t").limit(3).window(.first(2)))
        store.waitForObservers()
        guard case .error(let notFound)? = missing.take().first, case .error(let invalid)? = limited.take().first else {
            Issue.record("expected errors")
            return
        }
        #expect(notFound.code == .notFound)
        #expect(notFound.message.contains("42"))
        #expect(invalid.code == .invalidQuery)
        #expect(throws: StoreError.self) { try store.rows(in: "msg").sorted(byKeyPath: "t").limit(3).window(.first(2)).fetch() }
    }

    @Test func fetchingAWindowReadsItsRows() throws {
        let window = try Fixture(.around(key: 5, before: 1, after: 1))
        let rows = try window.store.rows(in: "msg").sorted(byKeyPath: "t").window(.around(key: 5, before: 1, after: 1)).fetch()
        #expect(rows.compactMap { Int64(sqliteValue: $0["id"] ?? .null) } == [4, 5, 6])
        #expect(try window.store.rows(in: "msg").sorted(byKeyPath: "t").window(.last(4)).fetchCount() == 4)
    }

    /// On a rollback-journal file the observer holds no read transaction: each commit reads the window again and counts again.
    @Test func aWindowOnARollbackJournalFileFollowsOtherWriters() throws {
        let database = TemporaryDatabase()
        let (store, plain) = try RollbackJournalTests.observedFile(database)
        let recorder = ChangeRecorder(store.objects(Person.self).sorted(byKeyPath: "age").window(.last(3)))
        var ages: [Int?] = []
        var position: WindowPosition?
        var people: [Person] = []
        func catchUp() -> [Changes] {
            store.waitForObservers()
            store.waitForObservers()
            var changes: [Changes] = []
            for event in recorder.take() {
                event.apply(to: &people)
                if let results = event.results { ages = results.map(\.age); position = results.window }
                if let change = Changes(event) { changes.append(change) }
            }
            return changes
        }
        _ = catchUp()
        #expect(ages == [47, 48, 49])
        #expect(position == WindowPosition(offset: 47, totalCount: 50))
        try plain.execute("INSERT INTO person (first_name, last_name, age) VALUES ('new', 'X', 100)")
        #expect(catchUp() == [Changes(deletions: [0], insertions: [2])])
        #expect(ages == [48, 49, 100])
        #expect(position == WindowPosition(offset: 48, totalCount: 51))
        recorder.token?.window?.loadMore(at: .start, count: 2)
        #expect(catchUp() == [Changes(insertions: [0, 1])])
        #expect(ages == [46, 47, 48, 49, 100])
        #expect(position == WindowPosition(offset: 46, totalCount: 51))
    }
}
