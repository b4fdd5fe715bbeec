import Dispatch

/// How the `observe` overloads whose callback is isolated to the main actor
/// deliver: on the main queue, where the main actor runs, each call made as
/// the main actor (so the callback can update a `@MainActor` view or view
/// model directly, in Swift 6 mode).
enum MainActorDelivery {
    /// `.immediate` as asked when called on the main queue (the first result
    /// then comes before `observe` returns, as the main actor); elsewhere the
    /// first result comes asynchronously, on the main queue.
    static func scheduling(_ scheduling: ObservationScheduling) -> ObservationScheduling {
        if case .immediate = scheduling, !MainQueue.isCurrent { return .async }
        return scheduling
    }

    /// A delivery for the main queue that calls `block` as the main actor.
    static func deliver<Value: Sendable>(_ block: @escaping @MainActor (Value) -> Void) -> @Sendable (Value) -> Void {
        { value in MainActor.assumeIsolated { block(value) } }
    }
}

/// Whether code runs on the main queue, told apart from the main thread: the
/// main actor's jobs run on the main queue, on another thread after
/// `dispatchMain()` on Linux.
enum MainQueue {
    private static let key: DispatchSpecificKey<Bool> = {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        return key
    }()

    /// Whether the caller runs on the main queue.
    static var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }
}
