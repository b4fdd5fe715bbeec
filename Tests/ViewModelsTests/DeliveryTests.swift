import Foundation
import OpenCombineShim
import SluiceTestSupport
import Sluice
import Testing
import SluiceDemo
import SluiceViewModels

/// The obvious view-model code: a `@MainActor` model that sinks a publisher
/// and assigns to itself, with no `receive(on:)`. Its closure is isolated to
/// the main actor, so a delivery on any other queue would trap.
@MainActor
final class TitlesModel: ObservableObject {
    @Published var titles: [String] = []
    private var subscriptions = Set<AnyCancellable>()

    init(store: Store) {
        store.objects(Person.self).sorted(byKeyPath: "first_name").collectionPublisher
            .sink(receiveCompletion: { _ in }, receiveValue: { people in self.titles = people.map(\.firstName) })
            .store(in: &subscriptions)
    }
}

@MainActor
@Suite(.timeLimit(.minutes(10))) struct DeliveryTests {
    @Test func mainActorModelWithoutReceiveOnWorks() async throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try await store.write { tx in try tx.insert(Person(firstName: "B", lastName: "X")) }
        let model = TitlesModel(store: store)
        await settle(store)
        #expect(model.titles == ["B"])
        try await store.write { tx in try tx.insert(Person(firstName: "A", lastName: "X")) }
        await settle(store)
        #expect(model.titles == ["A", "B"])
    }
}

/// Combine's rule: calls to one subscriber never overlap and arrive in
/// order, whatever thread demand comes from.
@Suite(.timeLimit(.minutes(10))) struct SubscriberContractTests {
    final class Checker: Subscriber, @unchecked Sendable {
        typealias Input = CollectionChange<Person>
        typealias Failure = Never
        let inside = Locked(false)
        let overlaps = Locked(0)
        let counts = Locked<[Int]>([])
        let subscription = Locked<(any Subscription)?>(nil)
        var random: SystemRandomNumberGenerator

        init() { random = SystemRandomNumberGenerator() }

        func receive(subscription: any Subscription) {
            self.subscription.withLock { $0 = subscription }
            subscription.request(.max(1))
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            let overlapping = inside.withLock { inside in defer { inside = true }; return inside }
            if overlapping { overlaps.withLock { $0 += 1 } }
            if let results = input.results { counts.withLock { $0.append(results.count) } }
            usleep(UInt32.random(in: 0...300))
            inside.withLock { $0 = false }
            return .max(Int.random(in: 0...1))
        }

        func receive(completion: Subscribers.Completion<Never>) {}
    }

    @Test func callsNeverOverlapAndArriveInCommitOrder() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let checkers = (0..<8).map { _ in Checker() }
        for checker in checkers {
            store.objects(Person.self).changesetPublisher(keyPaths: nil, on: DispatchQueue(label: "subscriber")).subscribe(checker)
        }
        let done = Locked(false)
        // Demand arrives from several threads at once, while commits go on.
        let requesters = (0..<3).map { _ in
            Thread {
                while !done.withLock({ $0 }) {
                    for checker in checkers { checker.subscription.withLock { $0 }?.request(.max(Int.random(in: 1...2))) }
                    usleep(200)
                }
            }
        }
        requesters.forEach { $0.start() }
        for index in 0..<120 {
            try store.write { tx in try tx.insert(Person(firstName: "P\(index)", lastName: "X")) }
        }
        store.waitForObservers()
        done.withLock { $0 = true }
        for checker in checkers { checker.subscription.withLock { $0 }?.request(.unlimited) }
        for _ in 0..<200 where checkers.contains(where: { $0.counts.withLock { $0.last } != 120 }) { usleep(5_000) }
        for checker in checkers {
            #expect(checker.overlaps.withLock { $0 } == 0)
            let counts = checker.counts.withLock { $0 }
            #expect(counts.last == 120, "every commit arrived, merged or not")
            #expect(zip(counts, counts.dropFirst()).allSatisfy { $0 < $1 }, "in commit order: \(counts)")
        }
    }
}
