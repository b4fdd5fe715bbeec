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
public final class ObservableArray<Item>: ObservableObject, Observable {
    /// The current items.
    public private(set) var items: [Item] {
        get {
            registrar.access(self, keyPath: \.items)
            return storedItems
        }
        set {
            registrar.withMutation(of: self, keyPath: \.items) { storedItems = newValue }
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

    // @Published storage: Combine subscribers and `objectWillChange` see the same changes.
    @Published private var storedItems: [Item] = []
    @Published private var storedError: StoreError?
    private let registrar = ObservationRegistrar()

    private let changeSubject = PassthroughSubject<ArrayChange<Item>, Never>()
    private var token: ObservationToken?

    /// Item changesets: the initial items, then one change per commit, with
    /// the index spaces of `CollectionChange`.
    public var changes: AnyPublisher<ArrayChange<Item>, Never> { changeSubject.eraseToAnyPublisher() }

    /// The items now and after every change.
    public var itemsPublisher: AnyPublisher<[Item], Never> { $storedItems.eraseToAnyPublisher() }

    /// The error now and whenever it changes.
    public var errorPublisher: AnyPublisher<StoreError?, Never> { $storedError.eraseToAnyPublisher() }

    /// Maps a live query's rows with `transform`. `items` holds the first
    /// result as soon as this returns (read on the store's reader), so a
    /// list never shows empty for a frame; changes arrive on the main queue.
    public init<M: Sendable>(_ results: Results<M>, transform: @escaping @MainActor (M) -> Item) {
        token = results.observe(on: .main, scheduling: .immediate) { [weak self] change in
            MainActor.assumeIsolated {
                self?.apply(change, transform)
            }
        }
    }

    /// The observation token, for `store.write(withoutNotifying:)`.
    public var observationToken: ObservationToken? { token }

    /// Stops observing.
    public func cancel() {
        token?.invalidate()
        token = nil
    }

    private func apply<M>(_ change: CollectionChange<M>, _ transform: (M) -> Item) {
        switch change {
        case .initial:
            change.apply(to: &items, transform: transform)
            changeSubject.send(ArrayChange(items: items, kind: .initial))
        case .update(_, let deletions, let insertions, let modifications):
            change.apply(to: &items, transform: transform)
            changeSubject.send(ArrayChange(items: items, kind: .update(
                deletions: deletions, insertions: insertions, modifications: modifications,
                modificationsNew: change.modificationsNew, moves: change.moves.map { ($0.from, $0.to) })))
        case .error(let error):
            self.error = error
        }
    }
}

extension ObservableArray {
    /// Maps with the item type's own initializer.
    public convenience init(_ results: Results<Item.Source>) where Item: ViewModelItem {
        self.init(results) { Item($0) }
    }
}

/// A change of an `ObservableArray`: its items after the change, and the
/// indices that changed (as in `CollectionChange`).
public struct ArrayChange<Item> {
    /// What kind of change.
    public enum Kind {
        /// The first items.
        case initial
        /// A commit changed the items.
        case update(deletions: [Int], insertions: [Int], modifications: [Int], modificationsNew: [Int], moves: [(from: Int, to: Int)])
    }

    /// The items after the change.
    public let items: [Item]
    /// The change.
    public let kind: Kind

    /// Applies the change to a copy of the previous items (for a list that keeps its own).
    public func apply(to array: inout [Item]) {
        switch kind {
        case .initial:
            array = items
        case .update(let deletions, let insertions, _, let modificationsNew, _):
            for index in deletions.reversed() { array.remove(at: index) }
            for index in insertions { array.insert(items[index], at: index) }
            for index in modificationsNew { array[index] = items[index] }
        }
    }
}
