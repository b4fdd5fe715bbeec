import Foundation
import Logging
import ServiceLifecycle

/// Wakes the long polls of one service instance when a push commits, on any instance:
/// every push sends `NOTIFY sluice_head, '<space>:<head>'` in its transaction, and
/// ``HeadListener`` listens on one connection and passes each notification here.
///
/// Waiters never rely on it alone: while the listener is not connected (starting, or
/// PostgreSQL restarting) they poll every 20 ms, and while it is, they still read the
/// head every second (a notification lost with a dropped connection costs at most that).
public final class HeadSignal: @unchecked Sendable {
    // @unchecked Sendable: guarded by `lock`.
    private let lock = NSLock()
    private var listening = false
    /// Per space, how many notifications there were (a waiter takes a ticket before it
    /// reads the head, so a push that commits in between still wakes it).
    private var generations: [Int64: UInt64] = [:]
    private var waiters: [Int64: [UUID: CheckedContinuation<Void, Never>]] = [:]
    /// Waiters woken (a timeout, a cancellation) before they started waiting.
    private var woken: Set<UUID> = []

    /// A signal with no listener yet (waiters poll).
    public init() {}

    /// Whether notifications are arriving (the listener is connected).
    public var isListening: Bool { lock.withLock { listening } }

    func setListening(_ value: Bool) {
        let wake = lock.withLock {
            listening = value
            // Everyone re-reads the head: a notification may have been lost meanwhile.
            return takeAll(spaces: Array(waiters.keys))
        }
        wake.forEach { $0.resume() }
    }

    /// The current ticket of `space`; ``wait(space:after:upTo:)`` returns at once when a
    /// notification came after it.
    func ticket(_ space: Int64) -> UInt64 {
        lock.withLock { generations[space, default: 0] }
    }

    /// A push committed in `space`.
    func notify(space: Int64) {
        let wake = lock.withLock {
            generations[space, default: 0] &+= 1
            return takeAll(spaces: [space])
        }
        wake.forEach { $0.resume() }
    }

    /// Waits for a notification in `space` after `ticket`, for at most `timeout` (or until cancelled).
    func wait(space: Int64, after ticket: UInt64, upTo timeout: Duration) async {
        let id = UUID()
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            self?.wake(space: space, id: id)
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = lock.withLock {
                    if woken.remove(id) != nil || generations[space, default: 0] != ticket { return true }
                    waiters[space, default: [:]][id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            wake(space: space, id: id)
        }
        timer.cancel()
        await timer.value
        // A wake-up that came after another (the timer after a notification) left a mark.
        lock.withLock { _ = woken.remove(id) }
    }

    private func wake(space: Int64, id: UUID) {
        let continuation: CheckedContinuation<Void, Never>? = lock.withLock {
            if let continuation = waiters[space]?.removeValue(forKey: id) { return continuation }
            woken.insert(id)
            return nil
        }
        continuation?.resume()
    }

    /// Removes and returns the waiters of `spaces` (the lock is held).
    private func takeAll(spaces: [Int64]) -> [CheckedContinuation<Void, Never>] {
        var taken: [CheckedContinuation<Void, Never>] = []
        for space in spaces {
            taken += waiters.removeValue(forKey: space).map { Array($0.values) } ?? []
        }
        return taken
    }
}

/// Listens for `sluice_head` notifications on one PostgreSQL connection and passes them to
/// a ``HeadSignal`` (a `Service`: run it next to the `PostgresClient`, as `sluice-sync
/// serve` does); reconnects after a second when the connection drops.
public struct HeadListener: Service {
    let storage: SyncStorage
    let signal: HeadSignal

    /// A listener for `storage`'s database that wakes `signal`.
    public init(storage: SyncStorage, signal: HeadSignal) {
        self.storage = storage
        self.signal = signal
    }

    /// Listens until the service group shuts down.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await storage.listenForHeads { space in signal.notify(space: space) } connected: { signal.setListening(true) }
                } catch is CancellationError {
                    break
                } catch {
                    if Task.isCancelled { break }
                    storage.logger.warning("sluice-sync: listening for new transactions failed (long polls poll meanwhile): \(error)")
                }
                signal.setListening(false)
                try? await Task.sleep(for: .seconds(1))
            }
            signal.setListening(false)
        }
    }
}
