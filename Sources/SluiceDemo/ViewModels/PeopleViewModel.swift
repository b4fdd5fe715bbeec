import Foundation
import OpenCombineShim
import SluiceViewModels
import Sluice

/// The people list: people sorted by first then last name, a form to add
/// one, deletion, and a search that narrows the list as you type.
@MainActor
public final class PeopleViewModel: ObservableObject {
    /// One row of the list.
    public struct Item: ViewModelItem, Identifiable, Equatable, Sendable {
        /// The person's id.
        public let id: Int64
        /// "First Last".
        public let name: String

        /// Makes an item from a person.
        ///
        /// - Parameter person: the person.
        public init(_ person: Person) {
            id = person.id ?? 0
            name = person.fullName
        }
    }

    /// The people shown, live. (Its changes are forwarded to this model's
    /// `objectWillChange`, so a SwiftUI view observing the model redraws.)
    @Published public private(set) var people: ObservableArray<Item> {
        didSet { forwardChanges() }
    }
    /// The same people in sections by the initial of their first name
    /// (a sectioned table view's rows), live. Made when first read (until
    /// then nothing is sectioned); its changes are forwarded too.
    public var sections: ObservableSections<String, Item> {
        if let sectionsIfMade { return sectionsIfMade }
        let sections = ObservableSections<String, Item>(Self.sectioned(Self.results(store, search: FullTextQuery.prefixes(of: searchText.value))))
        sectionsIfMade = sections
        forwardChanges()
        return sections
    }
    private var sectionsIfMade: ObservableSections<String, Item>?
    /// The add form's first name.
    @Published public var firstName = "" { didSet { updateCanAdd() } }
    /// The add form's last name.
    @Published public var lastName = "" { didSet { updateCanAdd() } }
    /// Whether the form can add a person now.
    @Published public private(set) var canAdd = false
    /// The search field's text, the view model's input (a text field
    /// sends what is typed): the list narrows to the people with a word of
    /// their first name, last name or city starting with each word typed
    /// (diacritics and case aside), the best matches first, once typing
    /// pauses for `searchPause`.
    public let searchText = CurrentValueSubject<String, Never>("")
    /// How long typing must pause before the list follows the search field.
    public let searchPause: DispatchTimeInterval
    /// The full-text query of the list shown (nil: everyone).
    private var appliedQuery: String?

    /// Waits until the list follows the search field's current text (after the pause):
    /// for input that is not typed (a script, a command line), which must not act on the
    /// list of an older search.
    public func waitForSearch() async {
        while FullTextQuery.prefixes(of: searchText.value) != appliedQuery {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
    /// The last error from a write, for an alert.
    @Published public private(set) var lastError: StoreError?

    /// Whether both names are non-empty once trimmed.
    public var canAddPerson: AnyPublisher<Bool, Never> {
        $canAdd.removeDuplicates().eraseToAnyPublisher()
    }

    private func updateCanAdd() {
        canAdd = Self.canAdd(firstName: firstName, lastName: lastName)
    }

    private let store: Store
    private let writes: WriteQueue
    private var cancellables = Set<AnyCancellable>()
    private var forwarding: [AnyCancellable] = []

    /// A people list over a store.
    ///
    /// - Parameters:
    ///   - store: the store (with the demo schema's full-text index of people).
    ///   - searchPause: how long typing must pause before the list follows
    ///     the search field; 150 ms by default.
    public init(store: Store, searchPause: DispatchTimeInterval = .milliseconds(150)) {
        self.store = store
        self.searchPause = searchPause
        writes = WriteQueue(store: store)
        people = ObservableArray(Self.results(store, search: nil))
        writes.failed = { [weak self] error in self?.lastError = error }
        forwardChanges()
        searchText
            .dropFirst()
            .debounce(for: .init(searchPause), scheduler: MainQueue.scheduler)
            .map { FullTextQuery.prefixes(of: $0) }
            .removeDuplicates()
            .sink { [weak self] query in
                guard let self else { return }
                MainActor.assumeIsolated {
                    self.appliedQuery = query
                    self.people = ObservableArray(Self.results(self.store, search: query))
                    if self.sectionsIfMade != nil {
                        self.objectWillChange.send()
                        self.sectionsIfMade = ObservableSections<String, Item>(Self.sectioned(Self.results(self.store, search: query)))
                        self.forwardChanges()
                    }
                }
            }
            .store(in: &cancellables)
    }

    private func forwardChanges() {
        forwarding = [people.objectWillChange.sink { [weak self] _ in self?.objectWillChange.send() }]
        if let sections = sectionsIfMade {
            forwarding.append(sections.objectWillChange.sink { [weak self] _ in self?.objectWillChange.send() })
        }
    }

    static func trimmed(_ text: String) -> String { text.trimmingCharacters(in: .whitespacesAndNewlines) }

    static func canAdd(firstName: String, lastName: String) -> Bool {
        !trimmed(firstName).isEmpty && !trimmed(lastName).isEmpty
    }

    /// The section title of a person: the first letter of the first name, upper-cased ("#" when there is none).
    ///
    /// - Parameter person: the person.
    /// - Returns: the section title.
    public nonisolated static func initial(of person: Person) -> String {
        person.firstName.first.map { String($0).uppercased() } ?? "#"
    }

    nonisolated static func sectioned(_ results: Results<Person>) -> SectionedResults<String, Person> {
        results.sectioned { PeopleViewModel.initial(of: $0) }
    }

    /// Everyone by first then last name; with a search, the matches of its
    /// full-text query, the most relevant first (then by name).
    static func results(_ store: Store, search: String?) -> Results<Person> {
        let all = store.objects(Person.self).sorted(by: \.firstName, \.lastName)
        guard let search else { return all }
        return all.searching(search)
    }

    /// Adds the person in the form, clearing the form at once (and filling
    /// it back when the write fails); returns the stored person, or nil
    /// when a name is empty or the write failed (`lastError` says why).
    ///
    /// - Returns: the stored person, or nil.
    @discardableResult
    public func addPerson() async -> Person? {
        await writes.addPerson(from: self, firstName: \.firstName, lastName: \.lastName)
    }

    /// Deletes the people at these positions of the current list.
    ///
    /// - Parameter offsets: positions in `people.items`.
    public func delete(at offsets: IndexSet) async {
        let ids = offsets.compactMap { $0 < people.items.count ? people.items[$0].id : nil }
        await writes.perform { tx in for id in ids { try tx.delete(Person.self, id: id) } }
    }

    /// Waits until the writes this model has asked for so far are done.
    public func waitForWrites() async {
        await writes.idle()
    }
}

extension WriteQueue {
    /// The add-person form of both people lists: inserts the trimmed names,
    /// clearing the form's fields at once and filling them back when the
    /// write fails (unless the user typed something meanwhile); nil when a
    /// name is empty or the write failed.
    func addPerson<Form: AnyObject>(
        from form: Form, firstName: ReferenceWritableKeyPath<Form, String>, lastName: ReferenceWritableKeyPath<Form, String>
    ) async -> Person? {
        let first = PeopleViewModel.trimmed(form[keyPath: firstName]), last = PeopleViewModel.trimmed(form[keyPath: lastName])
        guard !first.isEmpty, !last.isEmpty else { return nil }
        form[keyPath: firstName] = ""
        form[keyPath: lastName] = ""
        let person = await perform { tx in try tx.insert(Person(firstName: first, lastName: last)) }
        if person == nil, form[keyPath: firstName].isEmpty, form[keyPath: lastName].isEmpty {
            form[keyPath: firstName] = first
            form[keyPath: lastName] = last
        }
        return person
    }
}
