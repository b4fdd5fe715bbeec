import Foundation
import OpenCombineShim

/// A publisher over a store observation: subscribing starts the
/// observation (at the first demand), cancelling invalidates its token.
///
/// Values arrive on the main queue unless the publisher was made for
/// another one (`changesetPublisher(on:)`); move them with `receive(on:)`.
/// Every call to a subscriber happens on that queue, one at a time, in
/// commit order, whatever thread `request` is called from (Combine's rule).
/// When a subscriber has no demand left, values wait in a buffer of one,
/// merged with the next (for changesets: composed, indices remapped), so
/// nothing is lost and memory stays bounded; a merge that cancels out is
/// dropped.
public struct ObservationPublisher<Output: Sendable>: Publisher {
    /// Observations report errors in their values (`.error`), not as failures.
    public typealias Failure = Never

    /// Starts the observation, delivering on `queue`: `send` delivers a
    /// value, `finish` ends the stream.
    typealias Start = @Sendable (_ queue: DispatchQueue, _ send: @escaping @Sendable (Output) -> Void, _ finish: @escaping @Sendable () -> Void) -> ObservationToken
    /// Combines a value that is still waiting with the next one; nil when
    /// together they change nothing.
    typealias Merge = @Sendable (_ waiting: Output, _ next: Output) -> Output?

    let queue: DispatchQueue
    let start: Start
    let merge: Merge

    init(queue: DispatchQueue = .main, start: @escaping Start, merge: @escaping Merge) {
        self.queue = queue
        self.start = start
        self.merge = merge
    }

    /// Attaches a subscriber.
    ///
    /// - Parameter subscriber: the subscriber; its demand is honoured, and
    ///   changes that arrive while it has none are merged into the next one.
    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Never {
        let subscription = Subscription(subscriber: AnySubscriber(subscriber), queue: queue, start: start, merge: merge)
        subscriber.receive(subscription: subscription)
    }

    private final class Subscription: OpenCombineShim.Subscription, @unchecked Sendable {
        // @unchecked Sendable: mutable state is guarded by `lock`; the
        // subscriber is only called on `queue`, a serial queue.
        private let lock = NSLock()
        private var subscriber: AnySubscriber<Output, Never>?
        private var demand = Subscribers.Demand.none
        private var waiting: Output?
        private var finishRequested = false
        private var token: ObservationToken?
        private var started = false
        private let queue: DispatchQueue
        private let start: Start
        private let merge: Merge

        init(subscriber: AnySubscriber<Output, Never>, queue: DispatchQueue, start: @escaping Start, merge: @escaping Merge) {
            self.subscriber = subscriber
            self.queue = queue
            self.start = start
            self.merge = merge
        }

        var combineIdentifier: CombineIdentifier { CombineIdentifier(self) }

        func request(_ more: Subscribers.Demand) {
            guard more > .none else { return }
            lock.lock()
            demand += more
            let shouldStart = !started && subscriber != nil
            started = true
            let drainNeeded = waiting != nil || finishRequested
            lock.unlock()
            // Whatever waits is handed over on the queue, after anything
            // being delivered there now: never from this thread.
            if drainNeeded { queue.async { self.drain() } }
            if shouldStart {
                let token = start(queue, { [weak self] value in self?.receive(value) }, { [weak self] in self?.finish() })
                lock.lock()
                if subscriber == nil {
                    lock.unlock()
                    token.invalidate()
                } else {
                    self.token = token
                    lock.unlock()
                }
            }
        }

        /// On the queue: a new value from the observation.
        private func receive(_ value: Output) {
            lock.lock()
            guard subscriber != nil else { lock.unlock(); return }
            if let earlier = waiting {
                waiting = merge(earlier, value)
            } else {
                waiting = value
            }
            lock.unlock()
            drain()
        }

        /// On the queue: delivers what waits while there is demand, then a
        /// requested finish once nothing waits.
        private func drain() {
            while true {
                lock.lock()
                guard let subscriber else { lock.unlock(); return }
                if demand > .none, let value = waiting {
                    waiting = nil
                    demand -= 1
                    lock.unlock()
                    let more = subscriber.receive(value)
                    lock.lock()
                    demand += more
                    lock.unlock()
                    continue
                }
                if waiting == nil, finishRequested {
                    self.subscriber = nil
                    let token = self.token
                    self.token = nil
                    lock.unlock()
                    token?.invalidate()
                    subscriber.receive(completion: .finished)
                    return
                }
                lock.unlock()
                return
            }
        }

        /// On the queue: the observation has nothing more to say.
        private func finish() {
            lock.lock()
            finishRequested = true
            lock.unlock()
            drain()
        }

        func cancel() {
            lock.lock()
            subscriber = nil
            waiting = nil
            let token = self.token
            self.token = nil
            lock.unlock()
            token?.invalidate()
        }
    }
}

// MARK: - Results

extension Results {
    /// The changes of these results: `.initial`, then one `.update` per
    /// commit that changes them (merged when the subscriber falls behind),
    /// as RealmSwift's `changesetPublisher`.
    public var changesetPublisher: ObservationPublisher<CollectionChange<Element>> {
        changesetPublisher(keyPaths: nil)
    }

    /// The changes of these results, counting a row as modified only when
    /// one of `keyPaths` (column names) changes.
    ///
    /// - Parameters:
    ///   - keyPaths: the columns whose changes count as a modification; all when nil.
    ///   - queue: where the subscriber receives.
    /// - Returns: the publisher: the first result, then one change per commit.
    /// - Complexity: as `observe(keyPaths:on:scheduling:_:)`: O(k log n) per commit for k changed rows.
    public func changesetPublisher(keyPaths: [String]?, on queue: DispatchQueue = .main) -> ObservationPublisher<CollectionChange<Element>> {
        let results = self
        return ObservationPublisher(
            queue: queue,
            start: { queue, send, _ in results.observe(keyPaths: keyPaths, on: queue) { send($0) } },
            merge: { CollectionChange.merge($0, $1) })
    }

    /// The current rows as an array, now and after every commit that
    /// changes them; fails when the query can no longer run. Building each
    /// array costs O(n): for large results, prefer `changesetPublisher`.
    public var collectionPublisher: AnyPublisher<[Element], StoreError> {
        changesetPublisher
            .tryMap { change -> [Element] in
                if case .error(let error) = change { throw error }
                return change.results.map(Array.init) ?? []
            }
            .mapError { $0 as? StoreError ?? StoreError(code: .error, message: "\($0)") }
            .eraseToAnyPublisher()
    }

    /// The changes as an `AsyncSequence` (buffered without limit: none is
    /// lost). Iteration stops when the task is cancelled.
    public var changes: AsyncStream<CollectionChange<Element>> {
        let results = self
        return AsyncStream { continuation in
            let token = results.observe(on: Self.streamQueue) { continuation.yield($0) }
            continuation.onTermination = { _ in token.invalidate() }
        }
    }

    /// The current rows as arrays, as an `AsyncSequence`: now, then after
    /// every commit that changes them.
    public var collections: AsyncStream<[Element]> {
        let results = self
        return AsyncStream { continuation in
            let token = results.observe(on: Self.streamQueue) { change in
                if let snapshot = change.results { continuation.yield(Array(snapshot)) } else { continuation.finish() }
            }
            continuation.onTermination = { _ in token.invalidate() }
        }
    }
}

extension SectionedResults {
    /// The changes of these sections: `.initial`, then one `.update` per
    /// commit that changes them (merged when the subscriber falls behind).
    public var changesetPublisher: ObservationPublisher<SectionedResultsChange<Key, Element>> {
        changesetPublisher(keyPaths: nil)
    }

    /// The changes of these sections, counting a row as modified only when
    /// one of `keyPaths` (column names) changes.
    ///
    /// - Parameters:
    ///   - keyPaths: the columns whose changes count as a modification; all when nil.
    ///   - queue: where the subscriber receives.
    /// - Returns: the publisher: the first sections, then one change per commit.
    /// - Complexity: O(k log n) per commit for k changed rows, plus O(s) for s sections.
    public func changesetPublisher(keyPaths: [String]?, on queue: DispatchQueue = .main) -> ObservationPublisher<SectionedResultsChange<Key, Element>> {
        let sectioned = self
        return ObservationPublisher(
            queue: queue,
            start: { queue, send, _ in sectioned.observe(keyPaths: keyPaths, on: queue) { send($0) } },
            merge: { SectionedResultsChange.merge($0, $1) })
    }
}

extension LiveAggregate {
    /// The value now and after each commit that changes it (when the
    /// subscriber falls behind, only the latest waits); fails when the query
    /// cannot run.
    public var publisher: AnyPublisher<Value, StoreError> {
        publisher(on: .main)
    }

    /// The value on `queue`, now and after each commit that changes it.
    ///
    /// - Parameter queue: where the subscriber receives.
    /// - Returns: the publisher; it fails when the query cannot run.
    /// - Complexity: as `observe(on:scheduling:_:)`.
    public func publisher(on queue: DispatchQueue) -> AnyPublisher<Value, StoreError> {
        let aggregate = self
        return ObservationPublisher<Result<Value, StoreError>>(
            queue: queue,
            start: { queue, send, _ in aggregate.observe(on: queue) { send($0) } },
            merge: { _, latest in latest })
            .tryMap { try $0.get() }
            .mapError { $0 as? StoreError ?? StoreError(code: .error, message: "\($0)") }
            .eraseToAnyPublisher()
    }
}

extension Results {
    /// Async sequences are fed from a queue of their own (they buffer).
    static var streamQueue: DispatchQueue { DispatchQueue(label: "sluice.stream") }
}

extension CollectionChange {
    /// `first` followed by `second`, as one change; nil when together they
    /// change nothing (an insertion then a deletion of the same row).
    static func merge(_ first: CollectionChange, _ second: CollectionChange) -> CollectionChange? {
        switch (first, second) {
        case (_, .initial), (_, .error): return second
        case (.error, .update): return first
        case (.initial, .update(let results, _, _, _)): return .initial(results.with(moves: []))
        case (.update(let results1, _, _, _), .update(let results2, _, _, _)):
            guard let firstChanges = first.changeset, let secondChanges = second.changeset else { return second }
            let oldCount = results1.count - firstChanges.insertions.count + firstChanges.deletions.count
            let composed = ChangesetBuilder.compose(firstChanges, secondChanges, oldCount: oldCount)
            guard !composed.isEmpty else { return nil }
            return .update(results2, composed)
        }
    }
}
