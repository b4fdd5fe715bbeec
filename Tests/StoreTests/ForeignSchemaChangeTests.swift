import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice

/// A column another writer adds to (or renames in) a tracked table is
/// logged from then on, without `sluice track` again: the triggers list
/// the columns of the time, so a Sluice store that hears the schema change
/// (observing), writes after it, or opens after it installs them again.
/// Before, a commit by the shell that changed `nickname` and `age` logged
/// only `age`, and a renamed column kept its old name in the log.
@Suite(.serialized, .timeLimit(.minutes(2))) struct ForeignSchemaChangeTests {
    static let schema = "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT, rank INTEGER)"

    static func store(_ database: TemporaryDatabase) throws -> Store {
        let store = try database.store(migrations: [Migration(version: 1, name: "item", sql: schema)])
        try store.write { tx in
            for id in 1...20 { try tx.execute(sql: "INSERT INTO item VALUES (?, ?, ?)", arguments: [.integer(Int64(id)), .text("item \(id)"), .integer(Int64(id))]) }
        }
        try store.trackForeignWriters(tables: ["item"])
        return store
    }

    /// The last logged transaction's changed columns, old and new, per row.
    static func lastLogged(_ store: Store) throws -> [[String]] {
        let last = try #require(try store.changes(since: store.earliestToken).last)
        return last.changes.map { ($0.new?.columns ?? []).sorted() }
    }

    /// Waits until the store heard everything and its writer did what it was asked meanwhile.
    static func settle(_ store: Store) throws {
        store.waitForObservers()
        try store.write { _ in }
    }

    @Test func aColumnTheShellAddsIsLoggedByAnObservingStore() throws {
        let database = TemporaryDatabase()
        let store = try Self.store(database)
        let recorder = ChangeRecorder(store.rows(in: "item").sorted(byKeyPath: "id"))
        try Self.settle(store)
        try SQLiteShell.run(path: database.path, "ALTER TABLE item ADD COLUMN nickname TEXT;")
        try Self.settle(store)
        try SQLiteShell.run(path: database.path, "UPDATE item SET nickname = 'n' || id, rank = rank + 100 WHERE id <= 3;")
        try Self.settle(store)
        #expect(try Self.lastLogged(store) == Array(repeating: ["nickname", "rank"], count: 3))
        let shown = try #require(recorder.take().last?.results)
        #expect(shown.prefix(3).map { $0["nickname"] } == [.text("n1"), .text("n2"), .text("n3")])
        // A rename: the log says the new name.
        try SQLiteShell.run(path: database.path, "ALTER TABLE item RENAME COLUMN nickname TO alias;")
        try Self.settle(store)
        try SQLiteShell.run(path: database.path, "UPDATE item SET alias = 'a' WHERE id = 1;")
        try Self.settle(store)
        #expect(try Self.lastLogged(store) == [["alias"]])
    }

    @Test func aStoreThatWritesOrOpensAfterTheChangeInstallsTheTriggersAgain() throws {
        let database = TemporaryDatabase()
        do {
            let store = try Self.store(database)
            try SQLiteShell.run(path: database.path, "ALTER TABLE item ADD COLUMN nickname TEXT;")
            // Nothing observed: its next write finds the triggers outdated.
            try store.write { tx in try tx.execute(sql: "UPDATE item SET rank = 0 WHERE id = 20") }
            try SQLiteShell.run(path: database.path, "UPDATE item SET nickname = 'x', rank = 7 WHERE id = 5;")
            #expect(try Self.lastLogged(store) == [["nickname", "rank"]])
        }
        try SQLiteShell.run(path: database.path, "ALTER TABLE item ADD COLUMN color TEXT;")
        // Opened after the change.
        let reopened = try database.store(migrations: [Migration(version: 1, name: "item", sql: Self.schema)])
        try SQLiteShell.run(path: database.path, "UPDATE item SET color = 'red' WHERE id = 6;")
        #expect(try Self.lastLogged(reopened) == [["color"]])
    }

    /// Random commits by the shell on a tracked table, between which it adds
    /// and renames columns and creates indexes, with a store observing: after
    /// each one the log replays to exactly the table, and the list a live
    /// query delivered equals the table.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func theLogReplaysToTheTableThroughSchemaChanges(seed: UInt64) throws {
        let database = TemporaryDatabase()
        let store = try Self.store(database)
        let recorder = ChangeRecorder(store.rows(in: "item").sorted(byKeyPath: "id"))
        try Self.settle(store)
        let plain = PlainConnection(path: database.path)
        var state: [String: [Int64: [String: SQLiteValue]]] = [:]
        var token: HistoryToken?
        try ReliabilityTests.replay(store, into: &state, after: &token)
        var columns = ["name", "rank"]
        var random = SeededRandom(seed: seed)
        var added = 0
        for step in 0..<40 {
            var sql: String
            switch random.next(10) {
            case 0:
                added += 1
                sql = "ALTER TABLE item ADD COLUMN extra\(added) TEXT;"
                columns.append("extra\(added)")
            case 1 where columns.count > 2:
                let index = 2 + random.next(columns.count - 2)
                let renamed = columns[index] + "_r"
                sql = "ALTER TABLE item RENAME COLUMN \(columns[index]) TO \(renamed);"
                var rows = state["item", default: [:]]
                let old = columns[index]
                for (id, row) in rows {
                    var row = row
                    row[renamed] = row[old]
                    row[old] = nil
                    rows[id] = row
                }
                state["item"] = rows
                columns[index] = renamed
            case 2:
                sql = "CREATE INDEX IF NOT EXISTS item_\(columns[random.next(columns.count)]) ON item (\(columns[random.next(columns.count)]));"
            case 3:
                sql = "DELETE FROM item WHERE id = \(1 + random.next(30));"
            case 4:
                sql = "INSERT OR REPLACE INTO item (id, \(columns.joined(separator: ", "))) VALUES (\(1 + random.next(30)), "
                    + columns.map { _ in "'v\(step)'" }.joined(separator: ", ") + ");"
            default:
                let set = columns.filter { _ in random.next(2) == 0 }
                sql = "BEGIN; UPDATE item SET " + (set.isEmpty ? ["rank"] : set).map { "\($0) = '\(step)'" }.joined(separator: ", ")
                    + " WHERE id % 3 = \(random.next(3)); UPDATE item SET rank = \(step) WHERE id = \(1 + random.next(20)); COMMIT;"
            }
            try SQLiteShell.run(path: database.path, sql)
            try Self.settle(store)
            try ReliabilityTests.replay(store, into: &state, after: &token)
            let table = try plain.rows("SELECT id, \(columns.joined(separator: ", ")) FROM item ORDER BY id")
            let replayed = state["item", default: [:]].keys.sorted().map { id in
                [SQLiteValue.integer(id)] + columns.map { state["item"]?[id]?[$0] ?? .null }
            }
            #expect(replayed == table, "seed \(seed), step \(step): \(sql)")
            if let shown = recorder.take().last?.results {
                let current = columns
                let values: [[SQLiteValue]] = shown.map { (row: Row) -> [SQLiteValue] in
                    let id: SQLiteValue = row["id"] ?? .null
                    return [id] + current.map { (column: String) -> SQLiteValue in row[column] ?? .null }
                }
                #expect(values == table, "seed \(seed), step \(step): \(sql)")
            }
        }
    }
}
