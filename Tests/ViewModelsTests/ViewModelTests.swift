import Foundation
import OpenCombineShim
import SluiceTestSupport
import SluiceDemo
import Sluice
import Testing
@testable import SluiceViewModels

@MainActor
@Suite(.timeLimit(.minutes(10))) struct ObservableArrayTests {
    @Test func mapsOnlyInsertedAndModifiedRows() async throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try await store.write { tx in for name in ["B", "D", "F"] { try tx.insert(Person(firstName: name, lastName: "X")) } }
        var mapped: [String] = []
        let array = ObservableArray(store.objects(Person.self).sorted(byKeyPath: "first_name")) { (person: Person) -> String in
            mapped.append(person.firstName)
            return person.firstName.lowercased()
        }
        #expect(array.items == ["b", "d", "f"], "the first result is there at once")
        let changes = Recorder(array.changes)
        await settle(store)
        #expect(array.items == ["b", "d", "f"])
        #expect(mapped == ["B", "D", "F"])
        try await store.write { tx in try tx.insert(Person(firstName: "C", lastName: "X")) }
        await settle(store)
        try await store.write { tx in try tx.execute(sql: "UPDATE person SET first_name = 'Dd' WHERE first_name = 'D'") }
        await settle(store)
        #expect(array.items == ["b", "c", "dd", "f"])
        #expect(mapped == ["B", "D", "F", "C", "Dd"], "the initial rows, then one insertion and one modification")
        #expect(changes.values.count == 2, "the initial result came before the subscription; then two commits")
        #expect(changes.values.map(\.changeset) == [Changeset(insertions: [1]), Changeset(modifications: [2])])
        var mirror: [String] = ["b", "d", "f"]
        for change in changes.values { change.apply(to: &mirror) }
        #expect(mirror == array.items)
    }
}

@MainActor
@Suite(.timeLimit(.minutes(10))) struct PeopleViewModelTests {
    @Test func listsAddsDeletesAndSearches() async throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try await store.write { tx in
            try tx.insert(Person(firstName: "Zoë", lastName: "Ng"))
            try tx.insert(Person(firstName: "Ana", lastName: "Kim"))
            try tx.insert(Person(firstName: "Ana", lastName: "Bell"))
        }
        let model = PeopleViewModel(store: store)
        let canAdd = Recorder(model.canAddPerson)
        await settle(store)
        #expect(model.people.items.map(\.name) == ["Ana Bell", "Ana Kim", "Zoë Ng"])

        model.firstName = "  "
        model.lastName = "Ödegaard"
        model.firstName = "Émile"
        #expect(canAdd.values == [false, true])
        #expect(await model.addPerson()?.firstName == "Émile")
        #expect(model.firstName.isEmpty && model.lastName.isEmpty)
        #expect(canAdd.values == [false, true, false])
        await settle(store)
        #expect(model.people.items.map(\.name) == ["Ana Bell", "Ana Kim", "Zoë Ng", "Émile Ödegaard"])

        await model.delete(at: IndexSet(integer: 1))
        await settle(store)
        #expect(model.people.items.map(\.name) == ["Ana Bell", "Zoë Ng", "Émile Ödegaard"])

        await search(model, "ZO", store: store)
        #expect(model.people.items.map(\.name) == ["Zoë Ng"])
        try await store.write { tx in try tx.insert(Person(firstName: "Zora", lastName: "Q")) }
        await settle(store)
        #expect(model.people.items.map(\.name) == ["Zora Q", "Zoë Ng"], "the search narrows new rows live")
        await search(model, "", store: store)
        #expect(model.people.items.count == 4)
    }

    /// The search field is a `CurrentValueSubject` debounced: quick typing
    /// is one search, of the last text. It searches the demo's full-text
    /// index: words of first name, last name and city starting with each
    /// word typed, diacritics aside, the best matches first; any text is
    /// safe; the results stay live whoever writes.
    @Test func theSearchFieldIsDebouncedAndRanksMatchesLive() async throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: DemoSchema.migrations)
        try await store.write { tx in
            for (first, last, city) in [("Zoë", "Ng", "Oslo"), ("Ana", "Oslo", "Oslo"), ("Bo", "Kim", "Bergen"), ("Oslo", "Oslo", "Oslo"), ("Zoe", "Berg", "Hamar")] {
                try tx.insert(Person(firstName: first, lastName: last, city: city))
            }
        }
        let model = PeopleViewModel(store: store, searchPause: .milliseconds(100))
        await settle(store)
        let replaced = Recorder(model.$people.dropFirst())
        for text in ["o", "os", "osl"] { model.searchText.send(text) }
        await search(model, "oslo", store: store)
        #expect(replaced.values.count == 1, "typing four texts quickly is one search")
        #expect(model.people.items.map(\.name) == ["Oslo Oslo", "Ana Oslo", "Zoë Ng"], "the most Oslo first")

        await search(model, "zoe", store: store)
        #expect(model.people.items.map(\.name) == ["Zoe Berg", "Zoë Ng"], "diacritics aside; a tie by name")
        await search(model, "  zo, osl!", store: store)
        #expect(model.people.items.map(\.name) == ["Zoë Ng"], "every word, as the start of a word")

        // Another connection writes: the ranked search follows.
        await search(model, "oslo", store: store)
        let plain = PlainConnection(path: database.path)
        try plain.execute("UPDATE person SET city = 'Oslo' WHERE first_name = 'Bo'")
        await settle(store)
        #expect(model.people.items.map(\.name) == ["Oslo Oslo", "Ana Oslo", "Bo Kim", "Zoë Ng"])
        try plain.execute("UPDATE person SET last_name = 'Oslo' WHERE first_name = 'Zoë'")
        await settle(store)
        #expect(model.people.items.map(\.name) == ["Oslo Oslo", "Ana Oslo", "Zoë Oslo", "Bo Kim"], "a rank change moves the row")

        // Text that is FTS5 syntax, or no word at all, is only text.
        for text in ["oslo AND", "\"oslo", "NEAR(", "* : ^ 🙂"] {
            await search(model, text, store: store)
            #expect(model.lastError == nil, "\(text)")
        }
        #expect(model.people.items.count == 5, "no word: everyone")
    }

    @Test func sectionsByInitialFollowTheListAndItsSearch() async throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try await store.write { tx in
            for (first, last) in [("Zoë", "Ng"), ("Ana", "Kim"), ("ana", "Bell"), ("Émile", "Ö")] { try tx.insert(Person(firstName: first, lastName: last)) }
        }
        let model = PeopleViewModel(store: store)
        func layout() -> [String] { model.sections.sections.map { "\($0.key): " + $0.items.map(\.name).joined(separator: ", ") } }
        #expect(layout() == ["A: Ana Kim, ana Bell", "Z: Zoë Ng", "É: Émile Ö"], "sections in key order (as SQLite orders the text), rows as the list")
        let changes = Recorder(model.sections.changes)
        let willChange = Recorder(model.objectWillChange)
        try await store.write { tx in try tx.insert(Person(firstName: "Bea", lastName: "Q")) }
        await settle(store)
        #expect(layout() == ["A: Ana Kim, ana Bell", "B: Bea Q", "Z: Zoë Ng", "É: Émile Ö"])
        #expect(changes.values.last?.changeset == SectionedChangeset(sectionsToInsert: IndexSet(integer: 1)))
        #expect(!willChange.values.isEmpty, "section changes reach the model's objectWillChange")
        await search(model, "an", store: store)
        #expect(layout() == ["A: Ana Kim, ana Bell"])
    }

    @Test func changesOfTheListReachTheModelsObjectWillChange() async throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let model = PeopleViewModel(store: store)
        await settle(store)
        let willChange = Recorder(model.objectWillChange)
        try await store.write { tx in try tx.insert(Person(firstName: "A", lastName: "B")) }
        await settle(store)
        #expect(willChange.values.count == 1, "a SwiftUI view observing the model redraws")
        await search(model, "a", store: store)
        let afterSearch = willChange.values.count
        try await store.write { tx in try tx.insert(Person(firstName: "Ab", lastName: "C")) }
        await settle(store)
        #expect(willChange.values.count == afterSearch + 1, "still forwarded after the list was replaced")
    }

    @Test func twoViewModelsOnOneStoreSeeEachOthersWrites() async throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let first = PeopleViewModel(store: store)
        let second = PeopleViewModel(store: store)
        await settle(store)
        first.firstName = "Ana"
        first.lastName = "Kim"
        await first.addPerson()
        await settle(store)
        #expect(second.people.items.map(\.name) == ["Ana Kim"])
        await second.delete(at: IndexSet(integer: 0))
        await settle(store)
        #expect(first.people.items.isEmpty)
    }

    /// While another writer holds the store, adding a person leaves the main
    /// actor free: the form clears and other main-actor work runs before the
    /// write can commit; the write lands once the writer is free.
    @Test func writesNeverBlockTheMainThread() async throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let model = PeopleViewModel(store: store)
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        Thread {
            try? store.write { _ in
                entered.signal()
                // Only a safety net: the test releases it. (Were the view
                // model's write synchronous, it would block the main actor
                // until then and the checks below would fail.)
                _ = release.wait(timeout: .now() + 600)
            }
        }.start()
        while entered.wait(timeout: .now()) == .timedOut { try await Task.sleep(for: .milliseconds(1)) }
        model.firstName = "Ana"
        model.lastName = "Kim"
        let add = Task { await model.addPerson() }
        // No timing assumption: under ThreadSanitizer and a loaded main actor
        // this can take long; the writer is held until the test releases it.
        let deadline = ContinuousClock.now + .seconds(300)
        while !model.firstName.isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        #expect(model.firstName.isEmpty, "the add started and the main actor went on")
        let stored = try await store.read { db in try db.fetchCount(Person.self) }
        #expect(stored == 0, "the write still waits for the other writer")
        release.signal()
        #expect(await add.value?.fullName == "Ana Kim")
        #expect(try await store.read { db in try db.fetchCount(Person.self) } == 1)
    }

    @Test func writeFromAnotherProcessReachesTheViewModel() async throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: DemoSchema.migrations)
        let model = PeopleViewModel(store: store)
        await settle(store)
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        shell.arguments = ["-cmd", ".timeout 5000", database.path, "INSERT INTO person (first_name, last_name) VALUES ('Shell', 'Process')"]
        try shell.run()
        shell.waitUntilExit()
        #expect(shell.terminationStatus == 0)
        await settle(store)
        #expect(model.people.items.map(\.name) == ["Shell Process"])
    }

    @Test func releasedViewModelLeavesNothingBehind() async throws {
        weak var weakModel: PeopleViewModel?
        weak var weakStore: Store?
        do {
            let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
            weakStore = store
            var model: PeopleViewModel? = PeopleViewModel(store: store)
            weakModel = model
            await settle(store)
            if let model { await search(model, "a", store: store) }
            model = nil
            #expect(weakModel == nil, "no retain cycle through subscriptions")
            await settle(store)
        }
        #expect(weakStore == nil, "its observations were released with it")
    }
}

@MainActor
@Suite(.timeLimit(.minutes(10))) struct PackageViewModelTests {
    static func fixture() throws -> (Store, Int64, Int64) {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let (personID, packageID) = try store.write { tx -> (Int64, Int64) in
            let person = try tx.insert(Person(firstName: "Zoë", lastName: "Ng", street: "1 Main St", city: "Oslo", postalCode: "0150", country: "Norway"))
            let package = try tx.insert(Package(recipientID: person.id ?? 0))
            try tx.insert(PackageContent(packageID: package.id ?? 0, title: "Tea", weight: 250, position: 0))
            return (person.id ?? 0, package.id ?? 0)
        }
        return (store, personID, packageID)
    }

    @Test func namesAndStreetSyncBothWaysWithoutEcho() async throws {
        let (store, personID, packageID) = try Self.fixture()
        let model = try PackageViewModel(store: store, packageID: packageID)
        let rowChanges = Recorder(store.objectPublisher(Person.self, id: personID))
        await settle(store)
        #expect(model.recipientFirstName == "Zoë" && model.recipientLastName == "Ng" && model.street == "1 Main St")
        #expect(model.summary == "Recipient: Zoë Ng\nPostal address: 1 Main St, 0150 Oslo, Norway\nContents: Tea 250 (1 item, 250 g)")

        // View model -> model.
        model.recipientFirstName = "Zoe"
        model.street = "2 Side St"
        await model.waitForWrites()
        await settle(store)
        let stored = try await store.read { db in try db.fetchOne(Person.self, id: personID) }
        #expect(stored?.firstName == "Zoe" && stored?.street == "2 Side St")
        #expect(rowChanges.values.count == 2, "one write per edit")

        // Model -> view model, from elsewhere, and no echo write back.
        try await store.write { tx in try tx.execute(sql: "UPDATE person SET last_name = 'Nguyễn' WHERE id = ?", arguments: [.integer(personID)]) }
        await settle(store)
        #expect(model.recipientLastName == "Nguyễn")
        #expect(rowChanges.values.count == 3, "the store's change was not written back")
    }

    /// Quick edits of one field are written in the order they were made.
    @Test func quickEditsLandInOrder() async throws {
        let (store, personID, packageID) = try Self.fixture()
        let model = try PackageViewModel(store: store, packageID: packageID)
        await settle(store)
        for name in ["A", "Ab", "Abc", "Abcd"] { model.recipientFirstName = name }
        await model.waitForWrites()
        let stored = try await store.read { db in try db.fetchOne(Person.self, id: personID) }
        #expect(stored?.firstName == "Abcd")
        await settle(store)
        #expect(model.recipientFirstName == "Abcd")
    }

    @Test func addRandomItemAddsALightItemLive() async throws {
        let (store, _, packageID) = try Self.fixture()
        let model = try PackageViewModel(store: store, packageID: packageID)
        await settle(store)
        await model.addRandomItem()
        await settle(store)
        #expect(model.contents.items.count == 2)
        let added = try await store.read { db in try db.fetchAll(PackageContent.self, filter: Column("position") == 1) }
        #expect(added.count == 1)
        #expect(added.first.map { (200...300).contains($0.weight) && PackageViewModel.itemTitles.contains($0.title) } == true)
        #expect(model.summary.hasSuffix("Contents: Tea 250, \(added[0].title) \(added[0].weight) (2 items, \(250 + added[0].weight) g)"))
        #expect(model.totalWeight == 250 + added[0].weight && model.itemCount == 2)
        #expect(throws: StoreError.self) { try PackageViewModel(store: store, packageID: 999) }
    }

    @Test func packagesToTheRecipientsCityFollowPeopleAndPackages() async throws {
        let (store, personID, packageID) = try Self.fixture()
        let model = try PackageViewModel(store: store, packageID: packageID)
        await settle(store)
        #expect(model.packagesToRecipientCity == 1)
        try await store.write { tx in
            let other = try tx.insert(Person(firstName: "Ola", lastName: "N", city: "Bergen"))
            try tx.insert(Package(recipientID: other.id ?? 0))
        }
        await settle(store)
        #expect(model.packagesToRecipientCity == 1, "a package to Bergen")
        try await store.write { tx in try tx.execute(sql: "UPDATE person SET city = 'Oslo' WHERE city = 'Bergen'") }
        await settle(store)
        #expect(model.packagesToRecipientCity == 2, "its recipient moved to Oslo: only the person table changed")
        try await store.write { tx in try tx.execute(sql: "UPDATE person SET city = 'Trondheim' WHERE id = ?", arguments: [.integer(personID)]) }
        await settle(store)
        await settle(store)
        #expect(model.packagesToRecipientCity == 1, "this recipient moved: counted for Trondheim now")
    }

    /// Undo and redo revert this editor's own transactions from the change
    /// log; someone else's later change to the same value is a conflict.
    @Test func undoAndRedoEditsAndAddedItems() async throws {
        let (store, personID, packageID) = try Self.fixture()
        let model = try PackageViewModel(store: store, packageID: packageID)
        await settle(store)
        model.street = "2 Side St"
        await model.waitForWrites()
        await model.addItem(title: "Socks", weight: 300)
        // Someone else's edit is not this editor's to undo.
        try await store.write { tx in try tx.execute(sql: "UPDATE person SET city = 'Bergen' WHERE id = ?", arguments: [.integer(personID)]) }
        await model.refreshUndoState()
        #expect(model.canUndo && !model.canRedo)

        await model.undo()    // the added item
        await settle(store)
        #expect(model.contents.items.map(\.description) == ["Tea 250"])
        await model.undo()    // the street
        await settle(store)
        #expect(model.street == "1 Main St")
        #expect(!model.canUndo && model.canRedo)
        let person = try await store.read { db in try db.fetchOne(Person.self, id: personID) }
        #expect(person?.street == "1 Main St" && person?.city == "Bergen", "only this editor's change was undone")

        await model.redo()    // the street again
        await settle(store)
        #expect(model.street == "2 Side St" && model.canUndo && model.canRedo)

        // The item's redo conflicts with nothing; the street's undo now conflicts with another writer.
        try await store.write { tx in try tx.execute(sql: "UPDATE person SET street = '3 Other St' WHERE id = ?", arguments: [.integer(personID)]) }
        await model.undo()
        await settle(store)
        #expect(model.lastError?.code == .conflict)
        #expect(model.street == "3 Other St")
        #expect(model.lastError?.message.contains("street") == true)
    }
}

@MainActor
@Suite(.timeLimit(.minutes(10))) struct ConversationViewModelTests {
    @Test func sendStoresAndTheSessionRepliesOnItsClock() async throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: DemoSchema.migrations)
        let clock = ManualClock()
        let model = ConversationViewModel(store: store, conversationID: 7,
                                          session: SimulatedSession(friend: "Ana", delay: .seconds(2), clock: clock))
        await settle(store)
        await model.send("Hello")
        await settle(store)
        #expect(model.messages.items.map(\.text) == ["Hello"])
        #expect(model.messages.items.first?.isMine == true)
        // The reply waits for the clock, not for real time.
        while clock.sleeperCount == 0 { await Task.yield() }
        clock.advance(by: .seconds(1))
        await settle(store)
        #expect(model.messages.items.count == 1)
        clock.advance(by: .seconds(1))
        for _ in 0..<100 where model.messages.items.count < 2 { await settle(store) }
        #expect(model.messages.items.map(\.sender) == ["me", "Ana"])
        #expect(model.messages.items.last?.text == "You said: Hello")

        // The history is in the store: a new store on the file sees it.
        let reopened = try Store(path: database.path)
        let again = ConversationViewModel(store: reopened, conversationID: 7)
        await settle(reopened)
        #expect(again.messages.items.map(\.text) == ["Hello", "You said: Hello"])
    }

    /// A long history: the newest page is held, older pages come on request, the count is there for the header.
    @Test func aLongHistoryIsHeldOnePageAtATime() async throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        try await store.write { tx in
            for index in 0..<120 {
                try tx.insert(Message(conversationID: 7, sender: "Ada", text: "m\(index)", sentAt: start.addingTimeInterval(Double(index))))
            }
        }
        let model = ConversationViewModel(store: store, conversationID: 7, pageSize: 50)
        var changes: [Changeset] = []
        let cancellable = model.messages.changes.sink { if let changeset = $0.changeset { changes.append(changeset) } }
        await settle(store)
        #expect(model.messages.items.map(\.text) == (70..<120).map { "m\($0)" })
        #expect(model.totalCount == 120)
        #expect(model.hasOlder == true)
        model.loadOlder()
        await settle(store)
        #expect(model.messages.items.map(\.text) == (20..<120).map { "m\($0)" })
        #expect(changes.last?.insertions == Array(0..<50))
        model.loadOlder()
        await settle(store)
        #expect(model.messages.items.count == 120)
        #expect(model.hasOlder == false)
        await model.send("newest")
        await settle(store)
        // The window asks for 150 now: all 121 fit.
        #expect(model.messages.items.last?.text == "newest")
        #expect(model.messages.items.count == 121)
        #expect(model.totalCount == 121)
        withExtendedLifetime(cancellable) {}
    }
}

@MainActor
@Suite(.timeLimit(.minutes(10))) struct ReactiveFormModelTests {
    @Test func validationFollowsTheArticlesRules() async throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let id = try await store.write { tx in try tx.insert(Person(firstName: "A", lastName: "B")).id ?? 0 }
        let form = ReactiveFormModel(store: store, personID: id)
        let messages = Recorder(form.$validationMessages)
        let allowed = Recorder(form.submitAllowed)
        form.firstEntry = "abc"
        form.secondEntry = "abc"
        form.firstEntry = "abcde"
        form.secondEntry = "abcde"
        #expect(messages.values == [
            [ReactiveFormModel.lengthMessage],
            [ReactiveFormModel.mismatchMessage, ReactiveFormModel.lengthMessage],
            [ReactiveFormModel.lengthMessage],
            [ReactiveFormModel.mismatchMessage, ReactiveFormModel.lengthMessage],
            [],
        ])
        #expect(allowed.values == [false, true])
        #expect(await form.submit())
        #expect(try await store.read { db in try db.fetchOne(Person.self, id: id)?.email } == "abcde")
        form.secondEntry = "abcdf"
        #expect(await form.submit() == false)
        #expect(ReactiveFormModel.messages("Zoë12", "Zoë12").isEmpty, "characters, not bytes")
    }
}

@MainActor
@Suite(.timeLimit(.minutes(10))) struct TemperatureLimitsModelTests {
    @Test func limitsPushEachOtherAndRejectNonNumbers() async throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let model = TemperatureLimitsModel(store: store)
        await settle(store)
        #expect(model.low == 15 && model.high == 25)
        #expect(model.lowText == "15" && model.highText == "25")

        model.setLow(20)
        #expect(model.high == 30 && model.highText == "30", "high is pushed up to low + 10")
        model.setHigh(12)
        #expect(model.low == 2 && model.lowText == "2", "low is pushed down to high - 10")

        model.lowText = "abc"
        #expect(model.lowText == "2", "a non-number restores the last valid text")
        model.lowText = "7.5"
        #expect(model.low == 7.5 && model.high == 17.5)
        await model.waitForWrites()
        await settle(store)
        let state = try await store.read { db in try db.fetchOne(AppState.self, id: AppState.singletonID) }
        #expect(state?.temperatureLow == 7.5 && state?.temperatureHigh == 17.5)

        // A change made elsewhere shows up.
        try await store.write { tx in try tx.execute(sql: "UPDATE app_state SET temperature_low = 0, temperature_high = 40") }
        await settle(store)
        #expect(model.lowText == "0" && model.highText == "40")
    }
}

@MainActor
@Suite(.timeLimit(.minutes(10))) struct CurrentUserModelTests {
    @Test func sharedStateIsSeenByEveryViewModel() async throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let ana = try await store.write { tx in try tx.insert(Person(firstName: "Ana", lastName: "Kim")) }
        let first = CurrentUserModel(store: store)
        let second = CurrentUserModel(store: store)
        await settle(store)
        #expect(first.currentUser == nil)
        await first.setCurrentUser(ana.id)
        await settle(store, rounds: 5)
        #expect(second.currentUser?.firstName == "Ana")
        try await store.write { tx in try tx.execute(sql: "UPDATE person SET first_name = 'Anna'") }
        await settle(store, rounds: 5)
        #expect(first.currentUser?.firstName == "Anna" && second.currentUser?.firstName == "Anna")
        await second.setCurrentUser(nil)
        await settle(store, rounds: 5)
        #expect(first.currentUser == nil)
    }
}

/// A live array's first error is there as soon as its first items would be
/// (the first result is read in `init`): it was delivered a moment later,
/// after `init` had returned with no items and no error.
@MainActor
@Suite(.timeLimit(.minutes(10))) struct ObservableArrayErrorTests {
    @Test func theFirstErrorIsThereWhenInitReturns() throws {
        let store = try Store.inMemory(migrations: [])    // no person table
        let array = ObservableArray(store.objects(Person.self)) { (person: Person) in person.firstName }
        #expect(array.items.isEmpty)
        let error = try #require(array.error, "the error is set by init")
        #expect(error.code == .unknownTable && error.message.contains("person"), "\(error)")
    }
}
