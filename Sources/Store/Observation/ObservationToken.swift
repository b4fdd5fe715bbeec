import Dispatch
import Foundation

/// Keeps an observation alive: notifications stop when it is invalidated or
/// deallocated, as Realm's `NotificationToken`.
///
/// Pass tokens to `store.write(withoutNotifying:)` to skip notifying them
/// of a write the UI has already applied.
public final class ObservationToken: Sendable {
    private let state = Mutex(false)
    private let onInvalidate: @Sendable () -> Void
    /// The observation this token stands for.
    let observationID: ObjectIdentifier?

    init(observationID: ObjectIdentifier?, onInvalidate: @escaping @Sendable () -> Void) {
        self.observationID = observationID
        self.onInvalidate = onInvalidate
    }

    /// Whether `invalidate()` was called.
    public var isInvalidated: Bool { state.withLock { $0 } }

    /// Stops the observation and releases what it holds. No notification is
    /// delivered once this returns, except one already running.
    public func invalidate() {
        let wasInvalidated = state.withLock { invalidated in
            defer { invalidated = true }
            return invalidated
        }
        if !wasInvalidated { onInvalidate() }
    }

    deinit {
        invalidate()
    }
}

/// An observation that knows its token, to stop delivering once it is invalidated.
protocol TokenBearing: AnyObject {
    var token: ObservationToken? { get set }
}

/// Hands an observation's events to its callback, on the callback's queue
/// (or the observation queue), until the token is invalidated.
struct Delivery<Event: Sendable>: Sendable {
    private let deliver: @Sendable (Event) -> Void

    init(queue: DispatchQueue?, block: @escaping @Sendable (Event) -> Void) {
        if let queue {
            deliver = { event in queue.async { block(event) } }
        } else {
            deliver = block
        }
    }

    func send(_ event: Event, unless token: ObservationToken?) {
        guard token?.isInvalidated != true else { return }
        deliver(event)
    }
}

/// A lock around a value (Synchronization's Mutex needs macOS 15).
final class Mutex<Value>: @unchecked Sendable {
    // @unchecked Sendable because `value` is only touched with `lock` held.
    private var value: Value
    private let lock = NSLock()

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
