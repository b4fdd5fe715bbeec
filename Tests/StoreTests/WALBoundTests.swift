import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

/// Live queries hold a read transaction (their snapshots read elements on
/// access); the WAL must still restart while they are open, whoever writes,
/// and a checkpoint by another connection must still get through. Before,
/// every commit grew the WAL by its frames for as long as anything was
/// observed, and a TRUNCATE checkpoint by another connection stayed busy.
@Suite(.serialized, .timeLimit(.minutes(3))) struct WALBoundTests {
    /// Twice SQLite's default auto-checkpoint.
    static let bound = 8 << 20

    static func walSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? Int) ?? 0
    }

    static func seeded(_ database: TemporaryDatabase) throws -> Store {
        let store = try database.store(migrations: DemoSchema.migrations)
        try store.trackForeignWriters(tables: ["person"])
        try store.write { tx in
            for index in 0..<1_000 { try tx.insert(Person(firstName: "p\(index)", lastName: "X", age: index % 90)) }
        }
        return store
    }

    /// A TRUNCATE checkpoint by a plain connection (busy timeout 5 s) gets through and empties the WAL.
    static func expectTruncateSucceeds(_ plain: PlainConnection, _ path: String) throws {
        let result = try plain.rows("PRAGMA wal_checkpoint(TRUNCATE)")
        #expect(result.first?.first == .integer(0), "the checkpoint was busy: \(result)")
        #expect(walSize(path) == 0)
    }

    /// Own commits, another connection's and the shell's, with lists open:
    /// the WAL never passes the bound, the lists stay exact, and a TRUNCATE
    /// checkpoint by another connection succeeds at the end.
    @Test func theWALStaysBoundedWhileListsAreObserved() throws {
        let database = TemporaryDatabase()
        let store = try Self.seeded(database)
        let queries = [
            store.objects(Person.self).sorted(byKeyPath: "first_name"),
            try store.objects(Person.self).filter("age >= 30").sorted(byKeyPath: "age"),
            try store.objects(Person.self).filter("first_name BEGINSWITH 'p1'"),
        ]
        let recorders = queries.map { ChangeRecorder($0) }
        store.waitForObservers()
        let plain = PlainConnection(path: database.path)
        var largest = 0
        for round in 0..<2_000 {
            let id = 1 + round * 7 % 1_000
            if round % 2 == 0 {
                try plain.execute("UPDATE person SET age = \(round % 97) WHERE id = \(id)")
            } else {
                try store.write { tx in try tx.execute(sql: "UPDATE person SET age = ? WHERE id = ?", arguments: [.integer(Int64(round % 89)), .integer(Int64(id))]) }
            }
            largest = max(largest, Self.walSize(database.path))
            // A pause now and then, as an app's writes have (before, the WAL
            // grew through pauses too: the held read transaction never let go).
            if round % 100 == 99 {
                store.waitForObservers()
                // Only the latest state is compared: held snapshots keep the
                // old values of every row changed since (memory the suite shares).
                for recorder in recorders { _ = recorder.take() }
            }
        }
        // The shell: 5 × 100 commits in one process each, as fast as it goes.
        for batch in 0..<5 {
            try SQLiteShell.run(path: database.path, (0..<100).map { "UPDATE person SET age = \($0 % 50) WHERE id = \(1 + batch * 100 + $0);" }.joined(separator: "\n"))
            largest = max(largest, Self.walSize(database.path))
            store.waitForObservers()
        }
        store.waitForObservers()
        #expect(largest <= Self.bound, "the WAL grew to \(largest) bytes")
        for (query, recorder) in zip(queries, recorders) {
            let delivered = (recorder.take().last?.results).map { $0.map(\.id) } ?? []
            #expect(delivered == (try query.fetch().map(\.id)))
        }
        try Self.expectTruncateSucceeds(plain, database.path)
        withExtendedLifetime(recorders) {}
    }

    /// Another connection's TRUNCATE that is slow to copy the WAL (its sync of the
    /// database file takes 400 ms, between writing the frames and recording them as
    /// copied) gets through an idle observer: the observer moves its pin when it hears
    /// the checkpoint write the file, still before the frames count as copied, so that pin
    /// holds them; it moves it again until the checkpoint has copied them all.
    @Test func aSlowCheckpointByAnotherConnectionGetsThroughAnIdleObserver() throws {
        try SlowSyncVFS.register()
        let database = TemporaryDatabase()
        let store = try Self.seeded(database)
        let recorder = ChangeRecorder(store.objects(Person.self).sorted(byKeyPath: "first_name"))
        store.waitForObservers()
        try PlainConnection(path: database.path).execute("PRAGMA wal_checkpoint(TRUNCATE)")
        // Under 1 MiB of WAL, so the observer's idle upkeep only moves its pin (no
        // checkpoint of its own): it holds the frames until someone copies them.
        let writer = PlainConnection(path: database.path)
        for round in 0..<100 { try writer.execute("UPDATE person SET age = \(round) WHERE id = \(1 + round)") }
        store.waitForObservers()
        Thread.sleep(forTimeInterval: 0.3)

        let slow = PlainConnection(path: database.path, vfs: SlowSyncVFS.name, busyTimeout: 3_000)
        SlowSyncVFS.setDelay(milliseconds: 400)
        defer { SlowSyncVFS.setDelay(milliseconds: 0) }
        let result = try slow.rows("PRAGMA wal_checkpoint(TRUNCATE)")
        SlowSyncVFS.setDelay(milliseconds: 0)
        #expect(result.first?.first == .integer(0), "the checkpoint was busy: \(result)")
        #expect(Self.walSize(database.path) == 0)
        // Still observing: the next commit is heard.
        _ = recorder.take()
        try writer.execute("UPDATE person SET age = 1000 WHERE id = 1")
        store.waitForObservers()
        #expect(recorder.take().count == 1)
    }

    /// Once the store falls idle, its latest read transaction holds no
    /// frames: a TRUNCATE checkpoint by another connection gets through at
    /// once, while a list stays open and its snapshot stays readable.
    @Test func anIdleObserverLetsAnotherConnectionTruncateTheWAL() throws {
        let database = TemporaryDatabase()
        let store = try Self.seeded(database)
        let recorder = ChangeRecorder(store.objects(Person.self).sorted(byKeyPath: "first_name"))
        store.waitForObservers()
        let plain = PlainConnection(path: database.path)
        for round in 0..<300 { try plain.execute("UPDATE person SET age = \(round) WHERE id = \(1 + round)") }
        store.waitForObservers()
        let held = recorder.take().last?.results
        try Self.expectTruncateSucceeds(plain, database.path)
        // The snapshot delivered before the checkpoint still reads its rows, and later commits are still heard.
        #expect(held?.count == 1_000)
        #expect(held.map { Array($0).filter { $0.firstName == "p299" }.map(\.age) } == [299])
        try plain.execute("UPDATE person SET age = 1000 WHERE id = 1")
        store.waitForObservers()
        #expect(recorder.take().compactMap { change -> Int? in
            if case .update(_, _, _, let modifications) = change { return modifications.count }
            return nil
        } == [1])
    }
}
