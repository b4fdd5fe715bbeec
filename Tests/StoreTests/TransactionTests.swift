import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

@Suite(.timeLimit(.minutes(10))) struct TransactionTests {
    struct Failure: Error {}

    /// `Store(path: ":memory:")`: a private database per store, live
    /// queries work on it, and nothing is left once the store is released.
    @Test func memoryStoresArePrivateAndGoneWhenReleased() throws {
        var folder = ""
        do {
            let first = try Store(path: ":memory:", migrations: DemoSchema.migrations)
            let second = try Store(path: ":memory:", migrations: DemoSchema.migrations)
            #expect(first.path != second.path)
            let counts = Mutex<[Int]>([])
            let token = first.objects(Person.self).observe(on: DispatchQueue(label: "memory")) { change in
                if let people = change.results { counts.withLock { $0.append(people.count) } }
            }
            // The initial result first (polled: ThreadSanitizer is slow).
            let deadline = Date().addingTimeInterval(30)
            while counts.withLock({ $0.isEmpty }), Date() < deadline { usleep(1_000) }
            try first.write { tx in _ = try tx.insert(Person(firstName: "A", lastName: "One")) }
            first.waitForObservers()
            let delivered = Date().addingTimeInterval(30)
            while counts.withLock({ $0.count < 2 }), Date() < delivered { usleep(1_000) }
            #expect(counts.withLock { $0 } == [0, 1])
            #expect(try second.objects(Person.self).fetch().isEmpty, "another in-memory store is another database")
            folder = URL(fileURLWithPath: first.path).deletingLastPathComponent().path
            #expect(FileManager.default.fileExists(atPath: folder))
            token.invalidate()
        }
        let deadline = Date().addingTimeInterval(5)
        while FileManager.default.fileExists(atPath: folder), Date() < deadline { usleep(10_000) }
        #expect(!FileManager.default.fileExists(atPath: folder), "the file goes with the store")
    }

    @Test func writeCommitsWhenTheClosureReturns() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let zoe = try store.write { tx in try tx.insert(Person(firstName: "Zoë", lastName: "Ng")) }
        #expect(zoe.id != nil)
        #expect(try store.read { db in try db.fetchAll(Person.self) } == [zoe])
    }

    @Test func writeRollsBackWhenTheClosureThrows() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let before = try dump(store)
        #expect(throws: Failure.self) {
            try store.write { tx in
                try tx.insert(Person(firstName: "A", lastName: "B"))
                try tx.execute(sql: "UPDATE app_state SET temperature_low = 0, temperature_high = 100")
                throw Failure()
            }
        }
        #expect(try dump(store) == before)
    }

    @Test func failingCommitLeavesNothingBehind() throws {
        // A deferred foreign-key violation only fails at COMMIT.
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let before = try dump(store)
        let error = try #require(throws: StoreError.self) {
            try store.write { tx in
                try tx.deferForeignKeys()
                try tx.insert(Package(recipientID: 999))
            }
        }
        #expect(error.code == .constraint)
        #expect(try dump(store) == before)
        // The writer is usable again.
        try store.write { tx in try tx.insert(Person(firstName: "A", lastName: "B")) }
    }

    @Test func nestedWriteIsASavepoint() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try store.write { tx in
            try tx.insert(Person(id: 1, firstName: "Outer", lastName: "One"))
            do {
                try store.write { inner in
                    try inner.insert(Person(id: 2, firstName: "Inner", lastName: "Two"))
                    throw Failure()
                }
            } catch is Failure {}
            try store.write { inner in try inner.insert(Person(id: 3, firstName: "Inner", lastName: "Three")) }
        }
        #expect(try store.read { db in try db.fetchAll(Person.self).compactMap(\.id) } == [1, 3])
    }

    @Test func outerRollbackUndoesReleasedSavepoints() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        #expect(throws: Failure.self) {
            try store.write { tx in
                try store.write { inner in try inner.insert(Person(firstName: "Inner", lastName: "Kept?")) }
                throw Failure()
            }
        }
        #expect(try store.read { db in try db.fetchCount(Person.self) } == 0)
    }

    @Test func readersSeeOnlyCommittedDataAndDoNotWaitForTheWriter() async throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try await store.write { tx in try tx.insert(Person(id: 1, firstName: "Committed", lastName: "Row")) }
        let inserted = DispatchSemaphore(value: 0)
        let finish = DispatchSemaphore(value: 0)
        let writer = Thread {
            try? store.write { tx in
                try tx.insert(Person(id: 2, firstName: "Uncommitted", lastName: "Row"))
                inserted.signal()
                finish.wait()
            }
        }
        writer.start()
        inserted.wait()
        // The write transaction is open and holds the write lock: a read runs
        // now and sees the last committed state.
        let during = try await store.read { db in try db.fetchAll(Person.self).compactMap(\.id) }
        #expect(during == [1])
        finish.signal()
        // Once committed, the row is visible.
        var after: [Int64] = []
        for _ in 0..<200 {
            after = try await store.read { db in try db.fetchAll(Person.self).compactMap(\.id) }
            if after.count == 2 { break }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        #expect(after == [1, 2])
    }

    @Test func readInsideAWriteSeesTheCommittedState() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try store.write { tx in
            try tx.insert(Person(firstName: "New", lastName: "Row"))
            #expect(try tx.fetchCount(Person.self) == 1, "the transaction sees its own write")
            #expect(try store.read { db in try db.fetchCount(Person.self) } == 0, "a read sees only what is committed")
        }
    }

    @Test func writesFromManyThreadsAreSerialized() async throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for index in 0..<25 {
                        try store.write { tx in
                            let count = try tx.fetchCount(Person.self)
                            try tx.insert(Person(firstName: "T\(task)", lastName: "\(index)", age: count))
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let ages = try await store.read { db in try db.fetchAll(Person.self).compactMap(\.age) }
        #expect(ages == Array(0..<200), "each write saw every earlier one: no interleaving")
    }
}
