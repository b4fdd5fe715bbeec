import Observation
import OpenCombineShim
import Sluice

/// What `ObservableArray` and `ObservableSections` share: a value that a
/// live observation keeps current on the main actor, published three ways
/// at once (Swift's Observation, Combine's `ObservableObject`, and a
/// publisher of each change), an error, and the token that keeps the
/// observation alive.
///
/// Each delivered change sets the value once (one Observation change, one
/// `objectWillChange`), then sends the change. You use it through its two
/// subclasses; it cannot be subclassed outside this library.
@MainActor
public class LiveCollection<Value, Change>: ObservableObject, Observable {
    // @Published storage: Combine subscribers and `objectWillChange` see
    // the same changes as Observation's registrar.
    @Published private var storedValue: Value
    @Published private var storedError: StoreError?
    let registrar = ObservationRegistrar()
    private let changeSubject = PassthroughSubject<Change, Never>()
    /// The observation; set by the subclass's initializer.
    var token: ObservationToken?

    init(_ initial: Value) {
        storedValue = initial
    }

    /// The value, tracked by Observation (the subclasses name it `items` or `sections`).
    var value: Value {
        get {
            registrar.access(self, keyPath: \.value)
            return storedValue
        }
        set {
            registrar.withMutation(of: self, keyPath: \.value) { storedValue = newValue }
        }
    }

    /// The value now and after every change.
    var valuePublisher: AnyPublisher<Value, Never> { $storedValue.eraseToAnyPublisher() }

    /// Set when the query can no longer run (its table was dropped, a column renamed).
    public internal(set) var error: StoreError? {
        get {
            registrar.access(self, keyPath: \.error)
            return storedError
        }
        set {
            registrar.withMutation(of: self, keyPath: \.error) { storedError = newValue }
        }
    }

    /// The error now and whenever it changes.
    public var errorPublisher: AnyPublisher<StoreError?, Never> { $storedError.eraseToAnyPublisher() }

    /// Each change, after the value holds it: the first state, then one per
    /// commit that changed it, each carrying its changeset.
    public var changes: AnyPublisher<Change, Never> { changeSubject.eraseToAnyPublisher() }

    /// The observation token, for `store.write(withoutNotifying:)`.
    public var observationToken: ObservationToken? { token }

    /// Stops observing (releasing the object does too).
    public func cancel() {
        token?.invalidate()
        token = nil
    }

    /// Sets the value, then sends the change that led to it.
    func publish(_ value: Value, _ change: Change) {
        self.value = value
        changeSubject.send(change)
    }
}
