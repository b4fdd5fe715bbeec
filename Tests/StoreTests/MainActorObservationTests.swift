import Foundation
import OpenCombineShim
import SluiceTestSupport
import Testing
import Sluice
import SluiceDemo

/// Observation callbacks update main-actor state directly in Swift 6 mode:
/// the `observe` overloads without a queue call their block as the main
/// actor, on the main queue. (Before, every callback was a plain `@Sendable`
/// closure: `self.count = ...` in a `@MainActor` class did not compile,
/// nor did the live-queries guide's table-view example.) This file is
/// compiled in Swift 6 mode: that it builds is half the test.
@Suite(.timeLimit(.minutes(10))) struct MainActorObservationTests {
    /// A view model as an app writes it: main-actor state, tokens kept.
    @MainActor final class PeopleModel {
        var count = 0
        var sections: [String] = []
        var adults = 0
        var firstName: String?
        var published = 0
        var changesets = 0
        var tokens: [ObservationToken] = []
        var cancellables: Set<AnyCancellable> = []

        func start(_ store: Store) {
            let people = store.objects(Person.self).sorted(by: \.firstName)
            tokens.append(people.observe { [weak self] change in
                guard let self else { return }
                switch change {
                case .initial(let results): count = results.count
                case .update(let results, _, _, _): count = results.count; changesets += 1
                case .error: count = -1
                }
            })
            tokens.append(people.sectioned(by: \.lastName).observe { [weak self] change in
                if case .initial(let sections) = change { self?.sections = sections.map(\.key) }
                if case .update(let sections, _, _, _, _, _) = change { self?.sections = sections.map(\.key) }
            })
            tokens.append(store.objects(Person.self).filter(\.age >= 18).aggregates.count.observe { [weak self] value in
                if case .success(let adults) = value { self?.adults = adults }
            })
            tokens.append(store.observe(Person.self, id: 1) { [weak self] change in
                if case .change(_, let properties) = change, let name = properties.first(where: { $0.name == "first_name" }) {
                    self?.firstName = String(sqliteValue: name.newValue)
                }
            })
            people.collectionPublisher
                .sink(receiveCompletion: { _ in }, receiveValue: { [weak self] people in self?.published = people.count })
                .store(in: &cancellables)
        }
    }

    @MainActor @Test func callbacksOnTheMainActorUpdateAViewModel() async throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try await store.write { tx in
            try tx.insert(Person(id: 1, firstName: "Ana", lastName: "Berg", age: 30))
            try tx.insert(Person(id: 2, firstName: "Bo", lastName: "Dahl", age: 12))
        }
        let model = PeopleModel()
        model.start(store)
        func settled(_ condition: @MainActor () -> Bool) async throws -> Bool {
            for _ in 0..<1_000 where !condition() { try await Task.sleep(for: .milliseconds(5)) }
            return condition()
        }
        #expect(try await settled { model.count == 2 && model.sections == ["Berg", "Dahl"] && model.adults == 1 && model.published == 2 })
        try await store.write { tx in
            try tx.insert(Person(id: 3, firstName: "Cy", lastName: "Eng", age: 40))
            try tx.execute(sql: "UPDATE person SET first_name = 'Anna' WHERE id = 1")
        }
        #expect(try await settled { model.count == 3 && model.sections == ["Berg", "Dahl", "Eng"] && model.adults == 2 && model.published == 3 })
        #expect(try await settled { model.firstName == "Anna" })
        #expect(model.changesets == 1)
    }

    /// `.immediate` from the main actor delivers the first result before
    /// `observe` returns, as the main actor.
    @MainActor @Test func immediateOnTheMainActorDeliversBeforeReturning() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try store.write { tx in try tx.insert(Person(id: 1, firstName: "Ana", lastName: "Berg")) }
        final class Box { var count: Int? }
        let box = Box()
        let token = store.objects(Person.self).observe(scheduling: .immediate) { change in
            if case .initial(let people) = change { box.count = people.count }
        }
        #expect(box.count == 1)
        token.invalidate()
    }
}
