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
public final class ObservableSections<Key: Hashable & Sendable, Item>: LiveCollection<[ObservableSection<Key, Item>], SectionsChange<Key, Item>> {
    /// One section: its key and its items.
    public typealias Section = ObservableSection<Key, Item>

    /// The current sections.
    public var sections: [Section] { value }

    /// The sections now and after every change.
    public var sectionsPublisher: AnyPublisher<[Section], Never> { valuePublisher }

    /// Maps live sections' rows with `transform`. `sections` holds the first
    /// state as soon as this returns; changes arrive on the main queue.
    ///
    /// - Parameters:
    ///   - sectioned: the live sections.
    ///   - transform: makes an item from a row; called for the first rows,
    ///     then for the rows each commit inserts or modifies (and those of new sections).
    public init<M: Sendable>(_ sectioned: SectionedResults<Key, M>, transform: @escaping @MainActor (M) -> Item) {
        super.init([])
        token = sectioned.observe(scheduling: .immediate) { [weak self] change in self?.apply(change, transform) }
    }

    private func apply<M>(_ change: SectionedResultsChange<Key, M>, _ transform: (M) -> Item) {
        if case .error(let error) = change {
            self.error = error
            return
        }
        var mirror = value.map { (key: $0.key, items: $0.items) }
        change.apply(to: &mirror, transform: transform)
        let sections = mirror.map { Section(key: $0.key, items: $0.items) }
        publish(sections, change.changeset.map { .update(sections, $0) } ?? .initial(sections))
    }
}

extension ObservableSections {
    /// Maps with the item type's own initializer.
    ///
    /// - Parameter sectioned: the live sections; each row becomes an `Item(row)`.
    public convenience init(_ sectioned: SectionedResults<Key, Item.Source>) where Item: ViewModelItem {
        self.init(sectioned) { Item($0) }
    }
}

/// One section of an `ObservableSections`: its key and its items.
public struct ObservableSection<Key: Hashable & Sendable, Item>: Identifiable {
    /// The key every row of the section has (its title).
    public let key: Key
    /// The section's items, in order.
    public var items: [Item]
    /// The key.
    public var id: Key { key }

    /// A section.
    ///
    /// - Parameters:
    ///   - key: the key every row of the section has.
    ///   - items: the section's items, in order.
    public init(key: Key, items: [Item]) {
        self.key = key
        self.items = items
    }
}

/// A change of an `ObservableSections`: its sections after the change and,
/// for an update, the one sectioned changeset value (`SectionedChangeset`).
public enum SectionsChange<Key: Hashable & Sendable, Item> {
    /// The first sections.
    case initial([ObservableSection<Key, Item>])
    /// A commit changed the sections: the sections after it, and how they changed.
    case update([ObservableSection<Key, Item>], SectionedChangeset)

    /// The sections after the change.
    public var sections: [ObservableSection<Key, Item>] {
        switch self {
        case .initial(let sections), .update(let sections, _): return sections
        }
    }

    /// The changeset of an `.update`; nil for `.initial`.
    public var changeset: SectionedChangeset? {
        guard case .update(_, let changeset) = self else { return nil }
        return changeset
    }
}
