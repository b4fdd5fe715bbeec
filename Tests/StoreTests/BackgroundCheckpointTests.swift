import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice

/// The writer's checkpoints run on a connection and queue of their own
/// (`BackgroundCheckpoint`): the WAL is still copied into the database, and it still
/// starts again from its beginning under commits that never pause.
@Suite(.serialized, .timeLimit(.minutes(3))) struct BackgroundCheckpointTests {
    static func size(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
    }

    static func store(_ database: TemporaryDatabase) throws -> Store {
        let store = try database.store()
        try store.write { tx in try tx.execute(sql: "CREATE TABLE chunk (id INTEGER PRIMARY KEY, data BLOB NOT NULL)") }
        return store
    }

    /// Rows of 4 KiB each: a frame of the WAL apiece, about.
    static func insert(_ rows: Int, into store: Store) throws {
        try store.write { tx in
            for _ in 0..<rows { try tx.execute(sql: "INSERT INTO chunk (data) VALUES (randomblob(4000))") }
        }
    }

    /// One commit of about 1,500 frames, then nothing: the frames are copied into the
    /// database file (a passive checkpoint on another connection), and a plain connection
    /// reads every row.
    @Test func aCommitPastTheThresholdIsCopiedIntoTheDatabase() throws {
        let database = TemporaryDatabase()
        let store = try Self.store(database)
        let before = Self.size(database.path)
        try Self.insert(1_500, into: store)
        let deadline = Date().addingTimeInterval(20)
        while Self.size(database.path) < before + 1_500 * 4_000, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(Self.size(database.path) >= before + 1_500 * 4_000, "the database file has \(Self.size(database.path)) bytes")
        let plain = PlainConnection(path: database.path)
        #expect(try plain.rows("SELECT count(*) FROM chunk") == [[.integer(1_500)]])
    }

    /// Commits without a pause, 40 MB in all: the writer checkpoints itself past
    /// `writerFrames`, its next transaction starts the WAL again, and the WAL never holds
    /// much more than that. At the end, a TRUNCATE checkpoint by another connection empties it.
    @Test func theWALStaysBoundedUnderCommitsWithoutAPause() throws {
        let database = TemporaryDatabase()
        let store = try Self.store(database)
        var largest = 0
        for _ in 0..<400 {
            try Self.insert(25, into: store)
            largest = max(largest, Self.size(database.path + "-wal"))
        }
        let bound = (4_000 + 200) * 4_120    // writerFrames, a commit, and frame headers
        #expect(largest <= bound, "the WAL reached \(largest) bytes")
        let plain = PlainConnection(path: database.path)
        #expect(try plain.rows("SELECT count(*) FROM chunk") == [[.integer(10_000)]])
        // The store's own checkpoint of the last commits may still be running: a TRUNCATE
        // meanwhile answers busy (1), as it would to any writer's checkpoint.
        var busy = try plain.rows("PRAGMA wal_checkpoint(TRUNCATE)").first?.first
        let deadline = Date().addingTimeInterval(10)
        while busy != .integer(0), Date() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
            busy = try plain.rows("PRAGMA wal_checkpoint(TRUNCATE)").first?.first
        }
        #expect(busy == .integer(0))
        #expect(Self.size(database.path + "-wal") == 0)
    }
}
