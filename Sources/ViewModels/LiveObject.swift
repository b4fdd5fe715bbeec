import Dispatch
import Observation
import Sluice

/// One object, kept up to date on the main actor, for SwiftUI and
/// `@Observable` view models (Swift's Observation, like SwiftData's models):
///
/// ```swift
/// let person = LiveObject(store: store, Person.self, id: 7)
/// person.object?.firstName      // tracked by withObservationTracking / a SwiftUI body
/// person.isDeleted              // true once the row is gone
/// ```
///
/// `object` holds the stored row as soon as this is made, then each commit
/// that changes the row is one change of `object`. A deleted row makes
/// `object` nil and `isDeleted` true, and observing stops. Release it (or
/// call `cancel()`) to stop observing.
///
/// It follows a live query of the one row (`Results` filtered by the primary
/// key, its first state read before `init` returns): what `ObservableArray`
/// does for a list.
@MainActor
@Observable
public final class LiveObject<M: Model> {
    /// The object now; nil when it does not exist (or could not be read: see `error`).
    public private(set) var object: M?
    /// Whether the object was deleted (or never existed).
    public private(set) var isDeleted = false
    /// Why the object cannot be read now (its table was dropped, a value
    /// cannot be decoded); nil once it can.
    public private(set) var error: StoreError?

    @ObservationIgnored private var token: ObservationToken?

    /// Observes the object of `type` with this id.
    ///
    /// - Parameters:
    ///   - store: the store.
    ///   - type: the model type.
    ///   - id: the object's primary key.
    public init(store: Store, _ type: M.Type, id: M.ID) {
        token = store.objects(M.self).filter(Column(M.primaryKeyColumn) == id)
            .observe(scheduling: .immediate) { [weak self] change in self?.apply(change) }
    }

    /// Stops observing.
    public func cancel() {
        token?.invalidate()
        token = nil
    }

    private func apply(_ change: CollectionChange<M>) {
        switch change {
        case .initial(let results), .update(let results, _, _, _):
            if let model = results.first {
                object = model
                if error != nil { error = nil }
            } else {
                object = nil
                isDeleted = true
                cancel()
            }
        case .error(let failure):
            error = failure
        }
    }
}
