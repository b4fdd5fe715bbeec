import CSQLite
import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

/// A store observing a file in a rollback-journal mode holds no read
/// transaction between reads: there a read transaction is a shared lock
/// that keeps every writer from committing. Before, a watcher kept one for
/// good and every writer (the shell, another app, the switch back to WAL)
/// failed "database is locked" after its busy timeout.
@Suite(.serialized, .timeLimit(.minutes(2))) struct RollbackJournalTests {
    /// A demo database of 50 people, in `journal_mode=DELETE`, and a
    /// read-only store on it (a writer would switch it to WAL).
    static func observedFile(_ database: TemporaryDatabase) throws -> (Store, PlainConnection) {
        do {
            let writer = try database.store(migrations: DemoSchema.migrations)
            try writer.write { tx in
                for index in 0..<50 { try tx.insert(Person(firstName: "p\(index)", lastName: "X", age: index)) }
            }
        }
        let plain = PlainConnection(path: database.path)
        try plain.execute("PRAGMA journal_mode = DELETE")
        #expect(try plain.rows("PRAGMA journal_mode").first?.first == .text("delete"))
        var configuration = Store.Configuration()
        configuration.readOnly = true
        return (try Store(path: database.path, configuration: configuration), plain)
    }

    /// A writer with a short busy timeout: it fails at once if anything holds a lock.
    static func impatientWriter(_ path: String) throws -> OpaquePointer {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let handle else {
            throw StoreError(code: .cannotOpen, message: "cannot open \(path)")
        }
        sqlite3_busy_timeout(handle, 200)
        return handle
    }

    static func run(_ handle: OpaquePointer, _ sql: String) -> String? {
        var message: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(handle, sql, nil, nil, &message) != SQLITE_OK else { return nil }
        defer { sqlite3_free(message) }
        return message.map { String(cString: $0) } ?? "error"
    }

    @Test func anObserverNeverBlocksWritersAndHearsEveryCommit() throws {
        let database = TemporaryDatabase()
        let (store, plain) = try Self.observedFile(database)
        let query = store.objects(Person.self).sorted(byKeyPath: "age")
        let recorder = ChangeRecorder(query)
        store.waitForObservers()
        let first = recorder.take().last?.results
        #expect(first?.count == 50)
        let writer = try Self.impatientWriter(database.path)
        defer { sqlite3_close_v2(writer) }
        // Another connection, the shell, then the switch back to WAL and a commit after it.
        #expect(Self.run(writer, "UPDATE person SET age = 100 WHERE first_name = 'p0'") == nil)
        store.waitForObservers()
        try SQLiteShell.run(path: database.path, "DELETE FROM person WHERE first_name = 'p1';")
        store.waitForObservers()
        #expect(Self.run(writer, "INSERT INTO person (first_name, last_name, age) VALUES ('new', 'Y', 7)") == nil)
        store.waitForObservers()
        #expect(try plain.rows("PRAGMA journal_mode = WAL").first?.first == .text("wal"))
        #expect(Self.run(writer, "UPDATE person SET age = 8 WHERE first_name = 'p2'") == nil)
        store.waitForObservers()
        let events = recorder.take()
        let changes = events.compactMap { change -> [[Int]]? in
            guard case .update(_, let deletions, let insertions, let modifications) = change else { return nil }
            return [deletions, insertions, modifications]
        }
        // p0 moves from first to last; p1 (now first) goes; 'new' (age 7) comes in after p7; p2 (age 2, first) moves to age 8.
        #expect(changes == [[[0], [49], []], [[0], [], []], [[], [6], []], [[0], [6], []]])
        let latest = try #require(events.last?.results)
        #expect(latest.map(\.firstName) == (try query.fetch().map(\.firstName)))
        // The first snapshot still shows its own commit's rows: the store held its elements.
        #expect(first?.map(\.firstName) == (0..<50).map { "p\($0)" })
    }

    /// Between commits, the observing process holds no lock on the file.
    @Test func noLockIsHeldBetweenCommits() throws {
        let database = TemporaryDatabase()
        let (store, plain) = try Self.observedFile(database)
        let recorder = ChangeRecorder(store.objects(Person.self))
        store.waitForObservers()
        try plain.execute("UPDATE person SET age = 1 WHERE id = 3")
        store.waitForObservers()
        #expect(recorder.take().count == 2)
        let writer = try Self.impatientWriter(database.path)
        defer { sqlite3_close_v2(writer) }
        // An exclusive lock is granted at once: nobody holds a shared one.
        #expect(Self.run(writer, "BEGIN EXCLUSIVE") == nil)
        #expect(Self.run(writer, "ROLLBACK") == nil)
    }
}
