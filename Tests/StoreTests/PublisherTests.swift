import Foundation
import OpenCombineShim
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

/// Collects what a publisher emits.
final class Collector<Value>: @unchecked Sendable {
    // @unchecked Sendable: `values` and `finished` are guarded by `lock`.
    private let lock = NSLock()
    private var values: [Value] = []
    private var finished = false
    var cancellable: AnyCancellable?

    init<P: Publisher>(_ publisher: P) where P.Output == Value, P.Failure == Never {
        cancellable = publisher.sink(
            receiveCompletion: { [weak self] _ in self?.lock.withLock { self?.finished = true } },
            receiveValue: { [weak self] value in self?.lock.withLock { self?.values.append(value) } })
    }

    func take() -> [Value] { lock.withLock { defer { values = [] }; return values } }
    var isFinished: Bool { lock.withLock { finished } }
}

@Suite(.timeLimit(.minutes(10))) struct ObjectPublisherTests {
    static func store() throws -> Store {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try store.write { tx in
            try tx.insert(Person(id: 1, firstName: "Zoë", lastName: "Ng", age: 30))
            try tx.insert(Person(id: 2, firstName: "Ana", lastName: "Kim", age: 40))
        }
        return store
    }

    @Test func objectPublisherReportsChangedPropertiesThenDeletion() throws {
        let store = try Self.store()
        let changes = Collector(store.objectPublisher(Person.self, id: 1))
        store.waitForObservers()
        #expect(changes.take().isEmpty, "no initial value: changes only, as Realm's objectChangeset")
        try store.write { tx in try tx.execute(sql: "UPDATE person SET age = 31, email = 'z@x' WHERE id = 1") }
        try store.write { tx in try tx.execute(sql: "UPDATE person SET age = 99 WHERE id = 2") }      // another row
        try store.write { tx in try tx.execute(sql: "UPDATE person SET age = 31 WHERE id = 1") }      // same value
        try store.write { tx in try tx.delete(Person.self, id: 1) }
        store.waitForObservers()
        let events = changes.take()
        #expect(events.count == 2, "\(events)")
        if case .change(let person, let properties)? = events.first {
            #expect(person.age == 31 && person.email == "z@x")
            #expect(properties == [PropertyChange(name: "age", oldValue: .integer(30), newValue: .integer(31)),
                                   PropertyChange(name: "email", oldValue: .null, newValue: .text("z@x"))])
            #expect(try properties[0].oldValue(as: Int.self) == 30 && properties[0].newValue(as: Int.self) == 31)
            #expect(try properties[1].oldValue(as: String.self) == nil && properties[1].newValue(as: String.self) == "z@x")
            let mismatch = try #require(throws: StoreError.self) { try properties[1].newValue(as: Int.self) }
            #expect(mismatch.code == .typeMismatch && mismatch.message.contains("column 'email' holds"))
        } else {
            Issue.record("expected .change, got \(events)")
        }
        if case .deleted? = events.last {} else { Issue.record("expected .deleted, got \(events)") }
        #expect(changes.isFinished)
    }

    @Test func keyPathsLimitObjectNotifications() throws {
        let store = try Self.store()
        let names = Collector(store.objectPublisher(Person.self, id: 1, keyPaths: ["first_name"]))
        store.waitForObservers()
        try store.write { tx in try tx.execute(sql: "UPDATE person SET age = 50 WHERE id = 1") }
        store.waitForObservers()
        #expect(names.take().isEmpty)
        try store.write { tx in try tx.execute(sql: "UPDATE person SET first_name = 'Zoe', age = 51 WHERE id = 1") }
        store.waitForObservers()
        let events = names.take()
        guard case .change(_, let properties)? = events.first else { Issue.record("expected a change, got \(events)"); return }
        #expect(properties.map(\.name) == ["first_name"])
    }

    @Test func missingObjectIsReportedAsDeleted() throws {
        let store = try Self.store()
        let changes = Collector(store.objectPublisher(Person.self, id: 42))
        store.waitForObservers()
        let events = changes.take()
        if case .deleted? = events.first {} else { Issue.record("expected .deleted, got \(events)") }
        #expect(changes.isFinished)
    }

    @Test func propertyValuePublisherEmitsOnlyWhenThatPropertyChanges() throws {
        let store = try Self.store()
        let names = Collector(store.propertyValuePublisher(Person.self, id: 1, \.firstName))
        store.waitForObservers()
        try store.write { tx in try tx.execute(sql: "UPDATE person SET age = 32 WHERE id = 1") }        // other column
        try store.write { tx in try tx.execute(sql: "UPDATE person SET first_name = 'Ana' WHERE id = 2") } // other row
        try store.write { tx in try tx.execute(sql: "UPDATE person SET first_name = 'Zoe' WHERE id = 1") }
        try store.write { tx in try tx.execute(sql: "UPDATE person SET first_name = 'Zoe' WHERE id = 1") } // same value
        try store.write { tx in try tx.execute(sql: "UPDATE person SET first_name = 'Zoë' WHERE id = 1") }
        store.waitForObservers()
        #expect(names.take() == ["Zoë", "Zoe", "Zoë"])
        try store.write { tx in try tx.delete(Person.self, id: 1) }
        store.waitForObservers()
        #expect(names.isFinished)
    }

    @Test func objectValuePublisherFollowsTheObject() throws {
        let store = try Self.store()
        let values = Collector(store.objectValuePublisher(Person.self, id: 2))
        store.waitForObservers()
        try store.write { tx in try tx.execute(sql: "UPDATE person SET age = 41 WHERE id = 2") }
        try store.write { tx in try tx.delete(Person.self, id: 2) }
        store.waitForObservers()
        #expect(values.take().map { $0?.age } == [40, 41, nil])
        #expect(values.isFinished)
    }
}

@Suite(.timeLimit(.minutes(10))) struct ResultsPublisherTests {
    @Test func changesetPublisherDeliversInitialThenUpdates() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let changes = Collector(store.objects(Person.self).sorted(byKeyPath: "first_name").changesetPublisher)
        store.waitForObservers()
        try store.write { tx in try tx.insert(Person(firstName: "B", lastName: "X")) }
        try store.write { tx in try tx.insert(Person(firstName: "A", lastName: "X")) }
        store.waitForObservers()
        let events = changes.take()
        #expect(events.count == 3)
        #expect(events.compactMap(Changes.init) == [Changes(insertions: [0]), Changes(insertions: [0])])
        changes.cancellable?.cancel()
        try store.write { tx in try tx.insert(Person(firstName: "C", lastName: "X")) }
        store.waitForObservers()
        #expect(changes.take().isEmpty, "cancelled")
    }

    @Test func collectionPublisherDeliversArrays() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let lock = NSLock()
        nonisolated(unsafe) var arrays: [[String]] = []
        let cancellable = store.objects(Person.self).sorted(byKeyPath: "first_name").collectionPublisher
            .sink(receiveCompletion: { _ in }, receiveValue: { people in lock.withLock { arrays.append(people.map(\.firstName)) } })
        store.waitForObservers()
        try store.write { tx in try tx.insert(Person(firstName: "B", lastName: "X")) }
        store.waitForObservers()
        #expect(lock.withLock { arrays } == [[], ["B"]])
        cancellable.cancel()
    }

    /// A subscriber that asks for one value at a time gets later commits
    /// merged into one changeset that still applies exactly.
    @Test func slowSubscriberGetsMergedChangesetsThatStillApply() throws {
        final class OneAtATime: Subscriber, @unchecked Sendable {
            typealias Input = CollectionChange<Person>
            typealias Failure = Never
            let lock = NSLock()
            var subscription: (any Subscription)?
            var received: [CollectionChange<Person>] = []
            func receive(subscription: any Subscription) {
                lock.withLock { self.subscription = subscription }
                subscription.request(.max(1))
            }
            func receive(_ input: Input) -> Subscribers.Demand {
                lock.withLock { received.append(input) }
                return .none
            }
            func receive(completion: Subscribers.Completion<Never>) {}
            func requestOne() { lock.withLock { subscription }?.request(.max(1)) }
            func take() -> [CollectionChange<Person>] { lock.withLock { defer { received = [] }; return received } }
        }
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try store.write { tx in for index in 0..<10 { try tx.insert(Person(id: Int64(index + 1), firstName: "P\(index)", lastName: "X", age: index)) } }
        let results = store.objects(Person.self).sorted(byKeyPath: "age")
        let subscriber = OneAtATime()
        results.changesetPublisher.subscribe(subscriber)
        store.waitForObservers()
        var mirror: [Person] = []
        for change in subscriber.take() { change.apply(to: &mirror) }
        #expect(mirror.count == 10)
        // Three commits while the subscriber has no demand.
        try store.write { tx in try tx.execute(sql: "UPDATE person SET age = 100 WHERE id = 1") }
        try store.write { tx in try tx.delete(Person.self, id: 5); try tx.insert(Person(id: 11, firstName: "N", lastName: "X", age: 4)) }
        try store.write { tx in try tx.execute(sql: "UPDATE person SET email = 'e' WHERE id IN (2, 11)") }
        store.waitForObservers()
        #expect(subscriber.take().isEmpty)
        subscriber.requestOne()
        store.waitForObservers()    // what waits is handed over on the delivery queue
        let merged = subscriber.take()
        #expect(merged.count == 1, "three commits arrive as one changeset")
        for change in merged { change.apply(to: &mirror) }
        #expect(mirror == (try results.fetch()))
    }

    @Test func asyncSequenceYieldsChanges() async throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let results = store.objects(Person.self).sorted(byKeyPath: "first_name")
        var iterator = results.changes.makeAsyncIterator()
        guard case .initial(let initial)? = await iterator.next() else { Issue.record("no initial"); return }
        #expect(initial.isEmpty)
        try await store.write { tx in try tx.insert(Person(firstName: "A", lastName: "X")) }
        let next = await iterator.next()
        #expect(next.flatMap(Changes.init) == Changes(insertions: [0]))
        var arrays = results.collections.makeAsyncIterator()
        #expect(await arrays.next()?.map(\.firstName) == ["A"])
    }
}

@Suite(.timeLimit(.minutes(10))) struct ExternalChangeTests {
    /// Without any nudge, a commit by the sqlite3 shell is noticed by the
    /// store's own polling and delivered.
    @Test func anotherProcessesCommitIsNoticedWithinMilliseconds() throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: DemoSchema.migrations)
        let recorder = ChangeRecorder(store.objects(Person.self).sorted(byKeyPath: "first_name"))
        #expect(recorder.wait(for: 1))
        _ = recorder.take()
        let start = Date()
        try SQLiteShell.run(path: database.path, "INSERT INTO person (first_name, last_name) VALUES ('Shell', 'Process');")
        #expect(recorder.wait(for: 1, timeout: 5))
        let elapsed = Date().timeIntervalSince(start)
        let events = recorder.take()
        #expect(events.compactMap(Changes.init) == [Changes(insertions: [0])])
        #expect(events.first?.results?.first?.firstName == "Shell")
        print("external commit delivered after \(Int(elapsed * 1000)) ms (including starting sqlite3)")
    }
}

@Suite(.timeLimit(.minutes(10))) struct ObservationLifetimeTests {
    @Test func releasingTheTokenReleasesTheStore() throws {
        weak var weakStore: Store?
        weak var weakToken: ObservationToken?
        do {
            let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
            weakStore = store
            let token = store.objects(Person.self).observe { _ in }
            weakToken = token
            store.waitForObservers()
            token.invalidate()
            store.waitForObservers()
        }
        #expect(weakToken == nil)
        #expect(weakStore == nil, "no retain cycle between the store, its observations and their tokens")
    }

    @Test func cancellingSubscriptionsReleasesTheStore() throws {
        weak var weakStore: Store?
        do {
            let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
            weakStore = store
            let changes = Collector(store.objects(Person.self).changesetPublisher)
            let values = Collector(store.propertyValuePublisher(Person.self, id: 1, \.firstName))
            store.waitForObservers()
            changes.cancellable?.cancel()
            values.cancellable?.cancel()
            store.waitForObservers()
        }
        #expect(weakStore == nil)
    }
}
