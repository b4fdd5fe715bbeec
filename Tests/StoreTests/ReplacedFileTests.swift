import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice

/// The database file replaced under an open store: renamed over (`mv`), or
/// deleted and made again. Writes are refused with `.fileReplaced` naming
/// the path (never committed into the unlinked file), observers get
/// `.error(.fileReplaced)`, and the new file is left as it was. A restore
/// that writes into the same file (the shell's `.restore`, the backup API)
/// is an ordinary commit and keeps working.
@Suite(.timeLimit(.minutes(10))) struct ReplacedFileTests {
    enum Replacement: String, CaseIterable, CustomTestStringConvertible {
        case renamedOver, deletedAndMadeAgain
        var testDescription: String { rawValue }
    }

    static func populated(_ path: String, name: String) throws {
        try SQLiteShell.run(path: path, "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO item VALUES (1, '\(name)');")
    }

    @Test(arguments: CommitPathTests.captures, Replacement.allCases)
    func writesAreRefusedAndObserversToldWhenTheFileIsReplaced(capture: ChangeCapture, replacement: Replacement) async throws {
        let database = TemporaryDatabase()
        try Self.populated(database.path, name: "old")
        let store = try Store(path: database.path, configuration: Store.Configuration(), capture: capture)
        let mirror = CommitPathTests.RowMirror(store.rows(in: "item").sorted(byKeyPath: "id"))
        mirror.wait(until: [[1, "old"]])
        _ = mirror.take()

        let other = database.url("other.sqlite").path
        try Self.populated(other, name: "new")
        switch replacement {
        case .renamedOver:
            #expect(rename(other, database.path) == 0)
        case .deletedAndMadeAgain:
            try FileManager.default.removeItem(atPath: database.path)
            try Self.populated(database.path, name: "new")
        }
        // The file's bytes: opening it through SQLite while the old
        // database's -wal is beside it would read (and on closing,
        // checkpoint) the old frames over it.
        let before = try Data(contentsOf: URL(fileURLWithPath: database.path))

        let error = try #require(throws: StoreError.self) {
            try store.write { tx in try tx.execute(sql: "INSERT INTO item VALUES (2, 'lost')") }
        }
        #expect(error.code == .fileReplaced)
        #expect(error.message.contains(database.path))
        await #expect(throws: StoreError.self) {
            try await store.write { tx in try tx.execute(sql: "INSERT INTO item VALUES (3, 'lost')") }
        }

        // Observers hear of it without any write.
        let deadline = Date().addingTimeInterval(30)
        var errors: [StoreError] = []
        while errors.isEmpty, Date() < deadline {
            errors = mirror.take().errors
            usleep(2_000)
        }
        #expect(errors.map(\.code) == [.fileReplaced])
        // A read that needs a connection the store has not opened yet is
        // refused too, rather than opening the file now at the path.
        let readError = try #require(throws: StoreError.self) { try store.read { db in try db.fetchRows(sql: "SELECT * FROM item") } }
        #expect(readError.code == .fileReplaced)
        #expect(try Data(contentsOf: URL(fileURLWithPath: database.path)) == before, "the file now at the path is left as it was")
    }

    @Test func aWriteThatStartedBeforeTheReplacementIsNotCommitted() throws {
        let database = TemporaryDatabase()
        try Self.populated(database.path, name: "old")
        let store = try Store(path: database.path)
        let other = database.url("other.sqlite").path
        try Self.populated(other, name: "new")
        #expect(throws: StoreError.self) {
            try store.write { tx in
                try tx.execute(sql: "INSERT INTO item VALUES (2, 'lost')")
                #expect(rename(other, database.path) == 0)
            }
        }
        #expect(try PlainConnection(path: database.path).rows("SELECT * FROM item") == [[1, "new"]])
    }

    @Test func aRestoreIntoTheSameFileIsAnOrdinaryCommit() throws {
        let database = TemporaryDatabase()
        try Self.populated(database.path, name: "old")
        let backup = database.url("backup.sqlite").path
        try Self.populated(backup, name: "restored")
        let store = try Store(path: database.path)
        let mirror = CommitPathTests.RowMirror(store.rows(in: "item").sorted(byKeyPath: "id"))
        mirror.wait(until: [[1, "old"]])
        try SQLiteShell.run(path: database.path, ".restore \(backup)")
        mirror.wait(until: [[1, "restored"]])
        try store.write { tx in try tx.execute(sql: "INSERT INTO item VALUES (2, 'after')") }
        mirror.wait(until: [[1, "restored"], [2, "after"]])
        #expect(mirror.take().errors.isEmpty)
        #expect(try PlainConnection(path: database.path).rows("SELECT * FROM item ORDER BY id") == [[1, "restored"], [2, "after"]])
    }
}
