import Dispatch
import Observation

/// One object, kept up to date on the main actor, for SwiftUI and
/// `@Observable` view models (Swift's Observation, like SwiftData's models):
///
/// ```swift
/// let person = LiveObject(store: store, Person.self, id: 7)
/// person.object?.firstName      // tracked by withObservationTracking / a SwiftUI body
/// person.isDeleted              // true once the row is gone
/// ```
///
/// `object` holds the stored row as soon as this is made (read on the store's
/// reader), then each commit that changes the row is one change of `object`
/// (the observation's own first reading, right after it starts, can be one
/// more). A deleted row makes `object` nil and `isDeleted` true, and
/// observing stops. Release it (or call `cancel()`) to stop observing.
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
        do {
            object = try store.read { db in try db.fetchOne(M.self, id: id) }
        } catch {
            self.error = error as? StoreError ?? StoreError(code: .error, message: "\(error)")
        }
        token = store.observeObject(M.self, id: id, keyPaths: nil, on: .main) { [weak self] event in
            MainActor.assumeIsolated { self?.apply(event) }
        }
    }

    /// Stops observing.
    public func cancel() {
        token?.invalidate()
        token = nil
    }

    private func apply(_ event: ObjectEvent<M>) {
        switch event {
        case .initial(let model?), .change(.change(let model, _)):
            object = model
            if error != nil { error = nil }
        case .initial(nil), .change(.deleted):
            object = nil
            isDeleted = true
            cancel()
        case .change(.error(let failure)):
            error = failure
        }
    }
}
