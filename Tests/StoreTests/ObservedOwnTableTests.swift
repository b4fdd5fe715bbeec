import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice

/// Sluice's own tables named `sluice_live_*` (the sync client's conflict inbox) are observed
/// as the app's are, by this store and by others on the file, and never logged: a commit
/// that writes one and logs other rows leaves other connections to read the unlogged tables
/// again (its log entry has no commit number), so their observations stay exact.
@Suite(.timeLimit(.minutes(10))) struct ObservedOwnTableTests {
    static let schema = """
        CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE sluice_live_inbox (id INTEGER PRIMARY KEY, note TEXT);
        """
    static let query = "SELECT * FROM sluice_live_inbox ORDER BY id"

    static func mirror(_ store: Store, _ plain: PlainConnection) throws -> CommitPathTests.RowMirror {
        let mirror = CommitPathTests.RowMirror(store.rows(in: "sluice_live_inbox").sorted(byKeyPath: "id"))
        #expect(mirror.wait(until: try plain.rows(query)))
        // The first result may still be on its way (an empty table mirrors at once): wait for it.
        let deadline = Date().addingTimeInterval(30)
        var delivered = 0
        while delivered == 0, Date() < deadline {
            delivered += mirror.take().events.count
            if delivered == 0 { usleep(500) }
        }
        #expect(delivered == 1, "the first result")
        return mirror
    }

    static func changes(_ mirror: CommitPathTests.RowMirror) -> [Changes] {
        mirror.take().events.compactMap { Changes($0) }
    }

    @Test(arguments: CommitPathTests.captures)
    func writesOfThisStoreAreDeliveredAndNotLogged(_ capture: ChangeCapture) throws {
        let (store, plain) = try CommitPathTests.store(capture, schema: Self.schema)
        let mirror = try Self.mirror(store, plain)
        let start = try store.currentToken
        try store.write { tx in try tx.execute(sql: "INSERT INTO sluice_live_inbox (note) VALUES ('one')") }
        #expect(mirror.wait(until: try plain.rows(Self.query)))
        #expect(Self.changes(mirror) == [Changes(insertions: [0])])
        #expect(try store.changes(since: start).isEmpty, "a commit of the unlogged table alone logs nothing")
        // With a logged row: the log holds the item only, and no commit number.
        try store.write { tx in
            try tx.execute(sql: "INSERT INTO item (name) VALUES ('logged')")
            try tx.execute(sql: "UPDATE sluice_live_inbox SET note = 'two'")
        }
        #expect(mirror.wait(until: try plain.rows(Self.query)))
        #expect(Self.changes(mirror) == [Changes(modifications: [0])])
        let logged = try store.changes(since: start)
        #expect(logged.map { $0.changes.map(\.table) } == [["item"]])
        #expect(try plain.rows("SELECT commit_number FROM sluice_transaction ORDER BY seq DESC LIMIT 1") == [[.null]])
        try store.write { tx in try tx.execute(sql: "INSERT INTO item (name) VALUES ('alone')") }
        #expect(try plain.rows("SELECT commit_number IS NOT NULL FROM sluice_transaction ORDER BY seq DESC LIMIT 1") == [[.integer(1)]],
                "a commit of logged rows alone keeps its number")
    }

    @Test(arguments: CommitPathTests.captures)
    func anotherStoreHearsEveryCommitOfTheUnloggedTable(_ capture: ChangeCapture) throws {
        let (writer, plain) = try CommitPathTests.store(capture, schema: Self.schema)
        let reader = try Store(path: writer.path, configuration: Store.Configuration(), capture: capture)
        let mirror = try Self.mirror(reader, plain)
        let items = CommitPathTests.RowMirror(reader.rows(in: "item").sorted(byKeyPath: "id"))
        #expect(items.wait(until: []))
        // The unlogged table alone; with a logged row; both in one; from the shell's kind of
        // writer (a plain connection): each heard, with the right rows.
        try writer.write { tx in try tx.execute(sql: "INSERT INTO sluice_live_inbox (note) VALUES ('one')") }
        #expect(mirror.wait(until: try plain.rows(Self.query)))
        try writer.write { tx in
            try tx.execute(sql: "INSERT INTO item (name) VALUES ('logged')")
            try tx.execute(sql: "INSERT INTO sluice_live_inbox (note) VALUES ('two')")
        }
        #expect(mirror.wait(until: try plain.rows(Self.query)))
        #expect(items.wait(until: try plain.rows("SELECT * FROM item ORDER BY id")))
        try writer.write { tx in try tx.execute(sql: "DELETE FROM sluice_live_inbox WHERE note = 'one'") }
        #expect(mirror.wait(until: try plain.rows(Self.query)))
        try plain.execute("UPDATE sluice_live_inbox SET note = 'shell'")
        #expect(mirror.wait(until: try plain.rows(Self.query)))
        let states = mirror.take().states
        #expect(states.last == [[.integer(2), .text("shell")]])
    }
}
