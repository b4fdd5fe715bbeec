import Dispatch
import Observation
import OpenCombineShim
import Sluice

/// A view-model item made from a model, as RealmCombineMVVM's `ViewModelItem`:
/// `ObservableArray` can then map results without a closure.
public protocol ViewModelItem {
    /// The model it is made from.
    associatedtype Source: Model
    /// Makes the item.
    init(_ model: Source)
}

/// A live query mapped to view-model items, published on the main actor.
///
/// ```swift
/// let people = ObservableArray(store.objects(Person.self).sorted(byKeyPath: "first_name")) { person in
///     PersonItem(id: person.id, name: person.fullName)
/// }
/// people.items              // [PersonItem], @Published
/// people.changes            // item changesets, to animate a list
/// ```
///
/// On each commit only the inserted and modified rows are mapped; the rest
/// of `items` is kept. Release the array (or call `cancel()`) to stop
/// observing.
///
/// It is both an `ObservableObject` (Combine, `@ObservedObject`) and
/// `Observable` (Swift's Observation, `@Observable` view models, SwiftUI
/// on iOS 17 and later): reading `items` inside `withObservationTracking`
/// (or a SwiftUI body) tracks it, and each commit that changes the results
/// is one change.
@MainActor
public final class ObservableArray<Item>: LiveCollection<[Item], ArrayChange<Item>> {
    /// The current items.
    public var items: [Item] { value }

    /// For results that are a window (`Results.window`): where the items are
    /// in the whole result and how many rows it has; nil otherwise (and, for
    /// a window, until the first change says).
    public private(set) var window: WindowPosition? {
        get {
            registrar.access(self, keyPath: \.window)
            return storedWindow
        }
        set {
            registrar.withMutation(of: self, keyPath: \.window) { storedWindow = newValue }
        }
    }
    @Published private var storedWindow: WindowPosition?

    /// The items now and after every change.
    public var itemsPublisher: AnyPublisher<[Item], Never> { valuePublisher }

    /// Maps a live query's rows with `transform`. `items` holds the first
    /// result as soon as this returns (read on the store's reader), so a
    /// list never shows empty for a frame; changes arrive on the main queue.
    ///
    /// - Parameters:
    ///   - results: the live query.
    ///   - transform: makes an item from a row; called for the first rows,
    ///     then for the rows each commit inserts or modifies.
    public init<M: Sendable>(_ results: Results<M>, transform: @escaping @MainActor (M) -> Item) {
        super.init([])
        token = results.observe(scheduling: .immediate) { [weak self] change in self?.apply(change, transform) }
    }

    private func apply<M>(_ change: CollectionChange<M>, _ transform: (M) -> Item) {
        var items = value
        change.apply(to: &items, transform: transform)
        if let position = change.results?.window, position != window { window = position }
        switch change {
        case .initial: publish(items, .initial(items))
        case .update: publish(items, .update(items, change.changeset ?? Changeset()))
        case .error(let error): self.error = error
        }
    }
}

extension ObservableArray {
    /// Maps with the item type's own initializer.
    ///
    /// - Parameter results: the live query; each row becomes an `Item(row)`.
    public convenience init(_ results: Results<Item.Source>) where Item: ViewModelItem {
        self.init(results) { Item($0) }
    }
}

/// A change of an `ObservableArray`: its items after the change and, for
/// an update, the one changeset value (`Changeset`: index spaces, moves).
public enum ArrayChange<Item> {
    /// The first items.
    case initial([Item])
    /// A commit changed the items: the items after it, and how they changed.
    case update([Item], Changeset)

    /// The items after the change.
    public var items: [Item] {
        switch self {
        case .initial(let items), .update(let items, _): return items
        }
    }

    /// The changeset of an `.update`; nil for `.initial`.
    public var changeset: Changeset? {
        guard case .update(_, let changeset) = self else { return nil }
        return changeset
    }

    /// Applies the change to a copy of the previous items (for a list that keeps its own).
    ///
    /// - Parameter array: the items before the change; afterwards, the items after it.
    /// - Complexity: O(n) per deletion and insertion, O(1) per modification.
    public func apply(to array: inout [Item]) {
        switch self {
        case .initial(let items): array = items
        case .update(let items, let changeset): changeset.apply(to: &array) { items[$0] }
        }
    }
}
