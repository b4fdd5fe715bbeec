import Foundation
import Observation
import SluiceDemo
import SluiceMacros
import Testing
import SluiceViewModels

/// Swift's Observation: the live array, a live object and the @Observable
/// people list each change once per commit that changes them.
@MainActor
@Suite(.timeLimit(.minutes(10))) struct ObservationTests {
    /// Counts the changes of what `read` reads, re-arming after each one
    /// (withObservationTracking reports one change, then stops).
    @MainActor
    final class ChangeCounter {
        var count = 0
        private let read: @MainActor () -> Void

        init(_ read: @escaping @MainActor () -> Void) {
            self.read = read
            arm()
        }

        private func arm() {
            let read = self.read
            withObservationTracking { MainActor.assumeIsolated { read() } } onChange: { [weak self] in
                // Called before the change is made, on the main queue: count, then re-arm after it.
                DispatchQueue.main.async {
                    MainActor.assumeIsolated {
                        self?.count += 1
                        self?.arm()
                    }
                }
            }
        }
    }

    /// Lets every commit reach the main queue, and what the main queue was given run.
    func settle(_ store: Store) async {
        for _ in 0..<3 {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async {
                    store.waitForObservers()
                    DispatchQueue.main.async { continuation.resume() }
                }
            }
        }
    }

    func store() throws -> Store {
        let store = try Store.inMemory(migrations: DemoSchema.migrations)
        try store.write { tx in
            for name in ["Bo", "Di", "Fa"] { try tx.insert(Person(firstName: name, lastName: "X", age: 30)) }
        }
        return store
    }

    @Test func theLiveArrayChangesOncePerCommit() async throws {
        let store = try store()
        let array = ObservableArray(store.objects(Person.self).sorted(by: \.firstName)) { $0.firstName }
        #expect(array.items == ["Bo", "Di", "Fa"])
        await settle(store)
        let counter = ChangeCounter { _ = array.items }
        try await store.write { tx in try tx.insert(Person(firstName: "Cy", lastName: "X")) }
        await settle(store)
        #expect(counter.count == 1)
        #expect(array.items == ["Bo", "Cy", "Di", "Fa"])
        // Three rows in one commit: one change.
        try await store.write { tx in
            try tx.deleteAll(Person.self, filter: Filter("first_name IN {'Bo', 'Di'}"))
            try tx.update(Person.self, id: 3) { $0.age = 31 }
        }
        await settle(store)
        #expect(counter.count == 2)
        #expect(array.items == ["Cy", "Fa"])
        // A commit that leaves the results as they were: no change.
        try await store.write { tx in try tx.insert(Package(recipientID: 3)) }
        await settle(store)
        #expect(counter.count == 2)
    }

    @Test func aLiveObjectChangesOncePerCommitAndReportsDeletion() async throws {
        let store = try store()
        let person = LiveObject(store: store, Person.self, id: 2)
        #expect(person.object?.firstName == "Di")
        await settle(store)   // the observation's own first reading
        let counter = ChangeCounter { _ = person.object; _ = person.isDeleted }
        try await store.write { tx in try tx.update(Person.self, id: 2) { $0.city = "Oslo" } }
        await settle(store)
        #expect(counter.count == 1 && person.object?.city == "Oslo")
        try await store.write { tx in try tx.update(Person.self, id: 1) { $0.city = "Oslo" } }   // another row
        await settle(store)
        #expect(counter.count == 1)
        try await store.write { tx in try tx.delete(Person.self, id: 2) }
        await settle(store)
        #expect(counter.count == 2 && person.object == nil && person.isDeleted)
        let missing = LiveObject(store: store, Person.self, id: 99)
        #expect(missing.object == nil)
    }

    @Test func theObservablePeopleListBehavesAsTheCombineOne() async throws {
        let store = try store()
        let model = PeopleListModel(store: store)
        #expect(model.items.map(\.name) == ["Bo X", "Di X", "Fa X"])
        await settle(store)
        let counter = ChangeCounter { _ = model.items }
        model.firstName = "Émile"
        #expect(!model.canAdd)
        model.lastName = "Ödegaard"
        #expect(model.canAdd)
        #expect(await model.addPerson()?.firstName == "Émile")
        #expect(model.firstName.isEmpty && !model.canAdd)
        await settle(store)
        #expect(counter.count == 1)
        #expect(model.items.map(\.name) == ["Bo X", "Di X", "Fa X", "Émile Ödegaard"])

        await model.delete(at: IndexSet(integer: 0))
        await settle(store)
        #expect(counter.count == 2 && model.items.map(\.name) == ["Di X", "Fa X", "Émile Ödegaard"])

        model.searchText = "fa"
        await settle(store)
        #expect(model.items.map(\.name) == ["Fa X"])
        try await store.write { tx in try tx.insert(Person(firstName: "Fabian", lastName: "Y")) }
        await settle(store)
        #expect(model.items.map(\.name) == ["Fa X", "Fabian Y"], "the search (words starting with the text) narrows new rows live")
    }

    @Test func aLiveValueChangesOncePerCommitThatChangesIt() async throws {
        let store = try store()
        let count = LiveValue(store.objects(Person.self).aggregates.count)
        let oldest = LiveValue(store.objects(Person.self).aggregates.max(of: \.age))
        #expect(count.value == 3, "the value is there at once")
        await settle(store)
        let counter = ChangeCounter { _ = count.value }
        try await store.write { tx in try tx.insert(Person(firstName: "Al", lastName: "Y", age: 99)) }
        await settle(store)
        #expect(counter.count == 1 && count.value == 4)
        #expect(oldest.value == 99)
        try await store.write { tx in try tx.execute(sql: "UPDATE person SET last_name = 'Z'") }
        await settle(store)
        #expect(counter.count == 1, "a commit that leaves the count as it was changes nothing")
    }

    @Test func theObservablePeopleListHasSectionsByInitial() async throws {
        let store = try store()
        let model = PeopleListModel(store: store)
        func layout() -> [String] { model.sections.sections.map { "\($0.key): " + $0.items.map(\.name).joined(separator: ", ") } }
        #expect(layout() == ["B: Bo X", "D: Di X", "F: Fa X"], "the first sections are there at once")
        await settle(store)
        let counter = ChangeCounter { _ = model.sections.sections }
        try await store.write { tx in
            try tx.insert(Person(firstName: "Dan", lastName: "Y"))
            try tx.insert(Person(firstName: "Al", lastName: "Y"))
        }
        await settle(store)
        #expect(counter.count == 1, "one commit, one change")
        #expect(layout() == ["A: Al Y", "B: Bo X", "D: Dan Y, Di X", "F: Fa X"])
        try await store.write { tx in try tx.execute(sql: "DELETE FROM person WHERE first_name = 'Bo'") }
        await settle(store)
        #expect(layout() == ["A: Al Y", "D: Dan Y, Di X", "F: Fa X"])
    }
}
