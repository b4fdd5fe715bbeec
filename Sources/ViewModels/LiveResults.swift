#if canImport(SwiftUI)
import SwiftUI
import Sluice

/// A live query as a SwiftUI property, in the manner of SwiftData's `@Query`.
///
/// With the store in the environment (set once, at the root, as SwiftData's
/// `modelContainer(_:)`), a view names only its query:
///
/// ```swift
/// @main struct ChatApp: App {
///     @State private var store = try? Store(path: "chat.sqlite", migrations: migrations)  // nil: show why
///     var body: some Scene {
///         WindowGroup { PeopleList().environment(\.sluiceStore, store) }
///     }
/// }
///
/// struct PeopleList: View {
///     @LiveResults({ store in store.objects(Person.self).sorted(by: \.lastName) }) var people
///     var body: some View {
///         List(people, id: \.id) { Text($0.fullName) }
///     }
/// }
/// ```
///
/// Or with results made elsewhere (a view model that was given the store in
/// its `init`, as the demo's are): `@LiveResults(results) var people`.
///
/// The view keeps one `ObservableArray` (in `@State`) and redraws once per
/// commit that changes the results, through Swift's Observation.
///
/// Only on platforms with SwiftUI. Sluice's tests run on Linux, where this
/// file is not compiled: it is untested there; `ObservableArray`, which
/// does the work, is tested on every platform.
@MainActor
@propertyWrapper
public struct LiveResults<Element: Sendable>: DynamicProperty {
    @State private var source: Source
    @Environment(\.sluiceStore) private var environmentStore

    /// Follows these results. (SwiftUI keeps the first array it is given;
    /// as with any `@State`, the expression runs again when the view is
    /// re-created, and the extra array is released at once.)
    ///
    /// - Parameter results: the live query.
    public init(_ results: Results<Element>) {
        _source = State(wrappedValue: Source(array: ObservableArray(results) { $0 }))
    }

    /// Follows the results `query` makes from the environment's store
    /// (`\.sluiceStore`); no rows while there is none.
    ///
    /// - Parameter query: makes the live query from the store.
    public init(_ query: @escaping @MainActor (Store) -> Results<Element>) {
        _source = State(wrappedValue: Source(query: query))
    }

    /// Makes the array from the environment's store, before the body is read
    /// (SwiftUI calls it on the main actor).
    nonisolated public mutating func update() {
        MainActor.assumeIsolated { source.start(with: environmentStore) }
    }

    /// The rows now.
    public var wrappedValue: [Element] { source.array?.items ?? [] }

    /// The live array itself, for its `error` and `changes` (nil until there is a store).
    public var projectedValue: ObservableArray<Element>? { source.array }

    /// The array, once there is a store to make it from.
    @MainActor final class Source {
        private(set) var array: ObservableArray<Element>?
        private let query: (@MainActor (Store) -> Results<Element>)?
        private weak var store: Store?

        init(array: ObservableArray<Element>) {
            self.array = array
            query = nil
        }

        init(query: @escaping @MainActor (Store) -> Results<Element>) {
            self.query = query
        }

        func start(with store: Store?) {
            guard let query, let store, array == nil || self.store !== store else { return }
            self.store = store
            array = ObservableArray(query(store)) { $0 }
        }
    }
}

private struct SluiceStoreKey: EnvironmentKey {
    static let defaultValue: Store? = nil
}

extension EnvironmentValues {
    /// The store that `@LiveResults { store in ... }` reads its query from:
    /// `ContentView().environment(\.sluiceStore, store)`, as SwiftData's
    /// `modelContext` and GRDBQuery's database context.
    public var sluiceStore: Store? {
        get { self[SluiceStoreKey.self] }
        set { self[SluiceStoreKey.self] = newValue }
    }
}
#endif
