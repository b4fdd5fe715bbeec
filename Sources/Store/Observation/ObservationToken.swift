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

    private let windowHandle = Mutex<WindowHandle?>(nil)

    /// Whether `invalidate()` was called.
    public var isInvalidated: Bool { state.withLock { $0 } }

    /// For an observation of a window of results (`Results.window(_:)`):
    /// grows, shrinks or moves the window; nil for other observations.
    public internal(set) var window: WindowHandle? {
        get { windowHandle.withLock { $0 } }
        set { windowHandle.withLock { $0 = newValue } }
    }

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

/// Hands an observation's events to its callback, one at a time and in
/// order, on the callback's serial queue (the main queue by default), until
/// the token is invalidated. The observation queue never waits for a callback.
struct Delivery<Event: Sendable>: Sendable {
    private let queue: DispatchQueue
    private let block: @Sendable (Event) -> Void

    init(queue: DispatchQueue, block: @escaping @Sendable (Event) -> Void) {
        self.queue = queue
        self.block = block
    }

    func send(_ event: Event, unless token: ObservationToken?) {
        guard token?.isInvalidated != true else { return }
        let block = self.block
        let hasToken = token != nil
        queue.async { [weak token] in
            // Checked again on the queue: nothing arrives after `invalidate()`
            // returned on that queue (a released token is invalidated).
            if hasToken, token?.isInvalidated != false { return }
            block(event)
        }
    }
}
