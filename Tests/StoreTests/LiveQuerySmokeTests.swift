import Foundation
import SluiceTestSupport
import Testing
@testable import Store
import ViewModels

@Suite struct LiveQuerySmokeTests {
    @Test func insertUpdateDelete() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try store.write { tx in
            try tx.insert(Person(id: 1, firstName: "A", lastName: "X", age: 10))
            try tx.insert(Person(id: 2, firstName: "C", lastName: "X", age: 30))
        }
        let recorder = ChangeRecorder(store.objects(Person.self).filter("age > 5").sorted(byKeyPath: "first_name"))
        store.waitForObservers()
        let initial = recorder.take()
        #expect(initial.count == 1)
        guard case .initial(let people)? = initial.first else { Issue.record("no initial"); return }
        #expect(people.map(\.firstName) == ["A", "C"])
        try store.write { tx in try tx.insert(Person(id: 3, firstName: "B", lastName: "X", age: 20)) }
        store.waitForObservers()
        let events = recorder.take()
        #expect(events.compactMap(Changes.init) == [Changes(insertions: [1])])
        #expect(events.first?.results.map(Array.init)?.map(\.firstName) == ["A", "B", "C"])
    }
}
