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
public final class LiveObject<M: Model>: Observable {
    /// The object now; nil when it does not exist (or could not be read: see `error`).
    public private(set) var object: M? {
        get {
            registrar.access(self, keyPath: \.object)
            return storedObject
        }
        set {
            registrar.withMutation(of: self, keyPath: \.object) { storedObject = newValue }
        }
    }

    /// Whether the object was deleted (or never existed).
    public private(set) var isDeleted: Bool {
        get {
            registrar.access(self, keyPath: \.isDeleted)
            return storedIsDeleted
        }
        set {
            registrar.withMutation(of: self, keyPath: \.isDeleted) { storedIsDeleted = newValue }
        }
    }

    /// Why the object cannot be read now (its table was dropped, a value
    /// cannot be decoded); nil once it can.
    public private(set) var error: StoreError? {
        get {
            registrar.access(self, keyPath: \.error)
            return storedError
        }
        set {
            registrar.withMutation(of: self, keyPath: \.error) { storedError = newValue }
        }
    }

    private var storedObject: M?
    private var storedIsDeleted = false
    private var storedError: StoreError?
    private let registrar = ObservationRegistrar()
    private var token: ObservationToken?

    /// Observes the object of `type` with this id.
    public init(store: Store, _ type: M.Type, id: M.ID) {
        do {
            storedObject = try store.read { db in try db.fetchOne(M.self, id: id) }
        } catch {
            storedError = error as? StoreError ?? StoreError(code: .error, message: "\(error)")
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
            if storedError != nil { error = nil }
        case .initial(nil), .change(.deleted):
            object = nil
            isDeleted = true
            cancel()
        case .change(.error(let failure)):
            error = failure
        }
    }
}
