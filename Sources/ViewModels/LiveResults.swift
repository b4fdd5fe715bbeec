#if canImport(SwiftUI)
import SwiftUI
import Sluice

/// A live query as a SwiftUI property, in the manner of SwiftData's `@Query`:
///
/// ```swift
/// struct PeopleList: View {
///     @LiveResults(store.objects(Person.self).sorted(by: \.lastName)) var people
///     var body: some View {
///         List(people, id: \.id) { Text($0.fullName) }
///     }
/// }
/// ```
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
    @State private var array: ObservableArray<Element>

    /// Follows these results. (SwiftUI keeps the first array it is given;
    /// as with any `@State`, the expression runs again when the view is
    /// re-created, and the extra array is released at once.)
    ///
    /// - Parameter results: the live query.
    public init(_ results: Results<Element>) {
        _array = State(wrappedValue: ObservableArray(results) { $0 })
    }

    /// The rows now.
    public var wrappedValue: [Element] { array.items }

    /// The live array itself, for its `error` and `changes`.
    public var projectedValue: ObservableArray<Element> { array }
}
#endif
