import Foundation
import OpenCombineShim
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

/// Collects what an aggregate delivers (on a queue of its own).
typealias ValueRecorder<Value: Sendable> = EventRecorder<Result<Value, StoreError>>

extension EventRecorder {
    convenience init<Value>(_ aggregate: LiveAggregate<Value>) where Event == Result<Value, StoreError> {
        self.init { record in aggregate.observe(on: DispatchQueue(label: "test.aggregate")) { record($0) } }
    }
}

@Suite(.timeLimit(.minutes(10))) struct LiveAggregateTests {
    static func store() throws -> Store {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try store.write { tx in
            for (id, age) in [(1, 20), (2, 30), (3, nil), (4, 50)] as [(Int64, Int?)] {
                try tx.insert(Person(id: id, firstName: "P\(id)", lastName: "X", age: age))
            }
        }
        return store
    }

    static func settle(_ store: Store) {
        store.waitForObservers()
        usleep(20_000)   // the test queue's deliveries
    }

    @Test func countSumMinMaxAverageFollowCommitsExactly() throws {
        let store = try Self.store()
        let adults = try store.objects(Person.self).filter("age >= 18 OR age IS NULL")
        let count = ValueRecorder(adults.aggregates.count)
        let sum = ValueRecorder(adults.aggregates.sum(of: \.age))
        let minimum = ValueRecorder(adults.aggregates.min(of: \.age))
        let maximum = ValueRecorder(adults.aggregates.max(of: "age"))
        let average = ValueRecorder(adults.aggregates.average(of: \.age))
        Self.settle(store)
        #expect(count.take().map { try? $0.get() } == [4])
        #expect(sum.take().map { try? $0.get() } == [100])
        #expect(minimum.take().map { try? $0.get() } == [20])
        #expect(maximum.take().map { try? $0.get() } == [.integer(50)])
        #expect(average.take().map { try? $0.get() } == [100.0 / 3])

        try store.write { tx in try tx.execute(sql: "UPDATE person SET age = 60 WHERE id = 1") }   // min and max move
        Self.settle(store)
        #expect(count.take().isEmpty, "the count did not change: nothing delivered")
        #expect(sum.take().map { try? $0.get() } == [140])
        #expect(minimum.take().map { try? $0.get() } == [30])
        #expect(maximum.take().map { try? $0.get() } == [.integer(60)])
        _ = average.take()

        try store.write { tx in try tx.execute(sql: "DELETE FROM person WHERE age IS NOT NULL") }
        Self.settle(store)
        #expect(count.take().map { try? $0.get() } == [1])
        #expect(sum.take().map { try? $0.get() } == [0], "no values: 0, as Realm's sum")
        #expect(minimum.take().map { try? $0.get() } == [Int?.none])
        #expect(maximum.take().map { try? $0.get() } == [.null])
        #expect(average.take().map { try? $0.get() } == [Double?.none])
    }

    @Test func fetchAsksSQLite() throws {
        let store = try Self.store()
        let people = store.objects(Person.self)
        #expect(try people.aggregates.count.fetch() == 4)
        #expect(try people.aggregates.sum(of: "age").fetch() == .integer(100))
        #expect(try people.sorted(by: \.age).limit(2).aggregates.max(of: \.age).fetch() == 20, "over the limited rows: NULL, 20")
        #expect(throws: StoreError.self) { try people.aggregates.sum(of: "weight").fetch() }
    }

    @Test func anUnknownColumnIsAnErrorThatNamesIt() throws {
        let store = try Self.store()
        let recorder = ValueRecorder(store.objects(Person.self).aggregates.sum(of: "weight"))
        Self.settle(store)
        guard case .failure(let error)? = recorder.take().first else { Issue.record("expected an error"); return }
        #expect(error.message.contains("weight"), "\(error.message)")
    }

    @Test func thePublisherSendsEachNewValue() throws {
        let store = try Self.store()
        let received = Locked<[Int]>([])
        let cancellable = store.objects(Person.self).aggregates.count.publisher(on: DispatchQueue(label: "test.publisher"))
            .sink(receiveCompletion: { _ in }, receiveValue: { value in received.withLock { $0.append(value) } })
        Self.settle(store)
        try store.write { tx in try tx.delete(Person.self, id: 1) }
        Self.settle(store)
        #expect(received.withLock { $0 } == [4, 3])
        cancellable.cancel()
    }

    @Test func valuesIsAnAsyncSequence() async throws {
        let store = try Self.store()
        var iterator = store.objects(Person.self).aggregates.count.values.makeAsyncIterator()
        #expect(try await iterator.next() == 4)
        try await store.write { tx in try tx.insert(Person(firstName: "New", lastName: "Y")) }
        #expect(try await iterator.next() == 5)
    }

    /// After every commit, each delivered aggregate equals SQLite's over a
    /// plain connection: own commits, another connection, the sqlite3 shell.
    @Test(arguments: [(ChangesetPropertyTests.Writer.own, 150, UInt64(21)), (.otherConnection, 60, 22), (.sqliteShell, 40, 23)])
    func aggregatesEqualSQLAfterEveryCommit(writer: ChangesetPropertyTests.Writer, transactions: Int, seed: UInt64) throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: DemoSchema.migrations)
        let plain = PlainConnection(path: database.path)
        let people = try store.objects(Person.self).filter("city IS NOT NULL")
        let where_ = "FROM person WHERE city IS NOT NULL"
        let checks: [(String, ValueRecorder<SQLiteValue>)] = [
            ("SELECT sum(age) \(where_)", ValueRecorder(people.aggregates.sum(of: "age"))),
            ("SELECT min(first_name) \(where_)", ValueRecorder(people.aggregates.min(of: "first_name"))),
            ("SELECT max(email) \(where_)", ValueRecorder(people.aggregates.max(of: "email"))),
            ("SELECT min(age) \(where_)", ValueRecorder(people.aggregates.min(of: "age"))),
        ]
        let count = ValueRecorder(people.aggregates.count)
        let average = ValueRecorder(people.aggregates.average(of: "age"))
        var last: [SQLiteValue?] = Array(repeating: nil, count: checks.count)
        var lastCount: Int?
        var lastAverage: Double??
        func check(_ context: String) throws {
            Self.settle(store)
            for (index, (sql, recorder)) in checks.enumerated() {
                for value in recorder.take() { last[index] = try value.get() }
                #expect(last[index] == (try plain.rows(sql).first?.first), "\(sql) (\(context))")
            }
            for value in count.take() { lastCount = try value.get() }
            #expect(lastCount.map { Int64($0) } == Int64(sqliteValue: try plain.rows("SELECT count(*) \(where_)")[0][0]), "count (\(context))")
            for value in average.take() { lastAverage = .some(try value.get()) }
            let expected = Double(sqliteValue: try plain.rows("SELECT avg(age) \(where_)")[0][0])
            if let expected, let got = lastAverage ?? nil {
                #expect(abs(got - expected) <= 1e-9 * max(1, abs(expected)), "avg (\(context))")
            } else {
                #expect(expected == nil && (lastAverage ?? nil) == nil, "avg (\(context))")
            }
        }
        try check("initial")
        var workload = Workload(seed: seed)
        let other = writer == .otherConnection ? try Store(path: database.path) : nil
        for index in 0..<transactions {
            let statements = try writer.commitNext(&workload, store: store, other: other, path: database.path)
            try check("\(writer) transaction \(index): \(statements.map(\.sql))")
        }
        #expect((lastCount ?? 0) > 5, "the workload made rows")
    }
}
