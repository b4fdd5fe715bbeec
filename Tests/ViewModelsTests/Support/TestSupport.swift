import Dispatch
import Foundation
import OpenCombineShim
import SluiceDemo
import Sluice

/// Lets everything the store has committed reach the view models: the
/// observation queue delivers, then the main queue runs what it was given.
/// No sleeping: each step waits for queued work, in order.
@MainActor
func settle(_ store: Store, rounds: Int = 3) async {
    for _ in 0..<rounds {
        store.waitForObservers()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.main.async { continuation.resume() }
        }
    }
}

/// Records a publisher's values, from whatever thread they arrive on.
final class Recorder<Value>: @unchecked Sendable {
    // @unchecked Sendable: `recorded` is guarded by `lock`.
    private let lock = NSLock()
    private var recorded: [Value] = []
    private var cancellable: AnyCancellable?

    init<P: Publisher>(_ publisher: P) where P.Output == Value, P.Failure == Never {
        cancellable = publisher.sink { @Sendable [weak self] value in
            guard let self else { return }
            self.lock.withLock { self.recorded.append(value) }
        }
    }

    var values: [Value] { lock.withLock { recorded } }
}

/// A clock that moves only when a test advances it.
final class ManualClock: Clock, @unchecked Sendable {
    // @unchecked Sendable: `now` and `sleepers` are guarded by `lock`.
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let lock = NSLock()
    private var current = Instant(offset: .zero)
    private var sleepers: [(deadline: Instant, continuation: CheckedContinuation<Void, any Error>)] = []

    var now: Instant { lock.withLock { current } }
    var minimumResolution: Duration { .zero }

    /// How many tasks are sleeping on this clock.
    var sleeperCount: Int { lock.withLock { sleepers.count } }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try await withCheckedThrowingContinuation { continuation in
            lock.lock()
            if deadline <= current {
                lock.unlock()
                continuation.resume()
            } else {
                sleepers.append((deadline, continuation))
                lock.unlock()
            }
        }
    }

    /// Moves time forward, waking the sleepers whose deadline has come.
    func advance(by duration: Duration) {
        lock.lock()
        current = current.advanced(by: duration)
        let due = sleepers.filter { $0.deadline <= current }
        sleepers.removeAll { $0.deadline <= current }
        lock.unlock()
        for sleeper in due { sleeper.continuation.resume() }
    }
}

/// Types `text` into a people list's search field and waits until the list
/// follows it (after the search's pause), then until the store is settled.
@MainActor
func search(_ model: PeopleViewModel, _ text: String, store: Store) async {
    let replaced = Recorder(model.$people.dropFirst())
    model.searchText.send(text)
    for _ in 0..<3_000 where replaced.values.isEmpty {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.main.asyncAfter(deadline: .now() + .milliseconds(10)) { continuation.resume() }
        }
    }
    await settle(store)
}
