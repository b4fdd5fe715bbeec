import Dispatch
import Foundation
import Observation
import OpenCombineShim
import Sluice

/// Live sections mapped to view-model items, published on the main actor:
/// what a sectioned table view (the Realm MVVM article's
/// `TableViewSectionBinding`) or a SwiftUI `List` with `Section`s binds to.
///
/// ```swift
/// let byInitial = ObservableSections(
///     store.objects(Person.self).sorted(by: \.firstName).sectioned { String($0.firstName.prefix(1)) }
/// ) { PersonItem($0) }
/// byInitial.sections        // [ObservableSections.Section]: key and items
/// byInitial.changes         // each commit's section change, to animate the table
/// ```
///
/// On each commit only the inserted and modified rows (and the rows of new
/// sections) are mapped. It is both an `ObservableObject` and `Observable`:
/// each commit that changes the sections is one change.
@MainActor
public final class ObservableSections<Key: Hashable & Sendable, Item>: ObservableObject, Observable {
    /// One section: its key and its items.
    public struct Section: Identifiable {
        /// The key every row of the section has (its title).
        public let key: Key
        /// The section's items, in order.
        public var items: [Item]
        /// The key.
        public var id: Key { key }
    }

    /// The current sections.
    public private(set) var sections: [Section] {
        get {
            registrar.access(self, keyPath: \.sections)
            return storedSections
        }
        set {
            registrar.withMutation(of: self, keyPath: \.sections) { storedSections = newValue }
        }
    }
    /// Set when the query can no longer run.
    public private(set) var error: StoreError? {
        get {
            registrar.access(self, keyPath: \.error)
            return storedError
        }
        set {
            registrar.withMutation(of: self, keyPath: \.error) { storedError = newValue }
        }
    }

    @Published private var storedSections: [Section] = []
    @Published private var storedError: StoreError?
    private let registrar = ObservationRegistrar()
    private let changeSubject = PassthroughSubject<SectionChange, Never>()
    private var token: ObservationToken?

    /// How one commit changed the sections (index paths as in `SectionedResultsChange`).
    public struct SectionChange {
        /// Row index paths in the previous sections.
        public let deletions: [IndexPath]
        /// Row index paths in the new sections.
        public let insertions: [IndexPath]
        /// Row index paths in the previous sections of rows changed in place.
        public let modifications: [IndexPath]
        /// The same rows' index paths in the new sections.
        public let modificationsNew: [IndexPath]
        /// New sections' indices.
        public let sectionsToInsert: IndexSet
        /// Previous sections' indices that are gone.
        public let sectionsToDelete: IndexSet
        /// Whether this is the first state (reload everything).
        public let isInitial: Bool
    }

    /// Each change of the sections, after `sections` holds it.
    public var changes: AnyPublisher<SectionChange, Never> { changeSubject.eraseToAnyPublisher() }

    /// Maps live sections' rows with `transform`. `sections` holds the first
    /// state as soon as this returns; changes arrive on the main queue.
    public init<M: Sendable>(_ sectioned: SectionedResults<Key, M>, transform: @escaping @MainActor (M) -> Item) {
        token = sectioned.observe(on: .main, scheduling: .immediate) { [weak self] change in
            MainActor.assumeIsolated {
                self?.apply(change, transform)
            }
        }
    }

    /// Stops observing.
    public func cancel() {
        token?.invalidate()
        token = nil
    }

    private func apply<M>(_ change: SectionedResultsChange<Key, M>, _ transform: (M) -> Item) {
        if case .error(let error) = change {
            self.error = error
            return
        }
        var mirror = storedSections.map { (key: $0.key, items: $0.items) }
        change.apply(to: &mirror, transform: transform)
        sections = mirror.map { Section(key: $0.key, items: $0.items) }
        switch change {
        case .initial:
            changeSubject.send(SectionChange(deletions: [], insertions: [], modifications: [], modificationsNew: [],
                                             sectionsToInsert: [], sectionsToDelete: [], isInitial: true))
        case .update(_, let deletions, let insertions, let modifications, let sectionsToInsert, let sectionsToDelete):
            changeSubject.send(SectionChange(deletions: deletions, insertions: insertions, modifications: modifications,
                                             modificationsNew: change.modificationsNew, sectionsToInsert: sectionsToInsert,
                                             sectionsToDelete: sectionsToDelete, isInitial: false))
        case .error:
            break
        }
    }
}

extension ObservableSections {
    /// Maps with the item type's own initializer.
    public convenience init(_ sectioned: SectionedResults<Key, Item.Source>) where Item: ViewModelItem {
        self.init(sectioned) { Item($0) }
    }
}
