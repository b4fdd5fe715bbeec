import Foundation
import Observation
import SluiceViewModels
import Sluice

/// The people list in the `@Observable` style (Swift's Observation, as
/// SwiftUI on iOS 17 and SwiftData use it), next to the seed-faithful
/// `PeopleViewModel` (`ObservableObject` and Combine). Same behaviour:
/// people sorted by first then last name, a form to add one, deletion, and
/// a search that narrows the list as you type.
///
/// ```swift
/// struct PeopleView: View {
///     @State var model: PeopleListModel
///     var body: some View {
///         List(model.items) { Text($0.name) }
///             .searchable(text: $model.searchText)
///     }
/// }
/// ```
///
/// Reading `items` inside `withObservationTracking` (or a SwiftUI body)
/// tracks the live list: each commit that changes it is one change.
@MainActor
@Observable
public final class PeopleListModel {
    /// The people shown, live.
    public private(set) var people: ObservableArray<PeopleViewModel.Item>
    /// The same people in sections by the initial of their first name, live.
    public private(set) var sections: ObservableSections<String, PeopleViewModel.Item>
    /// The add form's first name.
    public var firstName = ""
    /// The add form's last name.
    public var lastName = ""
    /// Narrows the list to the people with a word of their first name, last
    /// name or city starting with each word typed (diacritics and case
    /// aside), the best matches first. (SwiftUI's `.searchable` sets it.)
    public var searchText = "" {
        didSet {
            let query = FullTextQuery.prefixes(of: searchText)
            guard query != FullTextQuery.prefixes(of: oldValue) else { return }
            people = ObservableArray(PeopleViewModel.results(store, search: query))
            sections = ObservableSections(PeopleViewModel.sectioned(PeopleViewModel.results(store, search: query)))
        }
    }
    /// The last error from a write, for an alert.
    public private(set) var lastError: StoreError?

    @ObservationIgnored private let store: Store
    @ObservationIgnored private let writes: WriteQueue

    /// A people list over a store; `items` holds the first result at once.
    ///
    /// - Parameter store: the store.
    public init(store: Store) {
        self.store = store
        writes = WriteQueue(store: store)
        people = ObservableArray(PeopleViewModel.results(store, search: nil))
        sections = ObservableSections(PeopleViewModel.sectioned(PeopleViewModel.results(store, search: nil)))
        writes.failed = { [weak self] error in self?.lastError = error }
    }

    /// The rows of the list (`people.items`).
    public var items: [PeopleViewModel.Item] { people.items }

    /// Whether both names are non-empty once trimmed.
    public var canAdd: Bool {
        PeopleViewModel.canAdd(firstName: firstName, lastName: lastName)
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
    /// - Parameter offsets: positions in `items`.
    public func delete(at offsets: IndexSet) async {
        let ids = offsets.compactMap { $0 < items.count ? items[$0].id : nil }
        await writes.perform { tx in for id in ids { try tx.delete(Person.self, id: id) } }
    }

    /// Waits until the writes this model has asked for so far are done.
    public func waitForWrites() async {
        await writes.idle()
    }
}
