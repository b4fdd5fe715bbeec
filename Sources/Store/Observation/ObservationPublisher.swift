import Foundation
import OpenCombineShim

/// A publisher over a store observation: subscribing starts the
/// observation (at the first demand), cancelling invalidates its token.
///
/// Values arrive on the store's observation queue; pick yours with
/// `receive(on:)`. When a subscriber has no demand left, values wait in a
/// buffer of one, merged with the next (for changesets: composed, indices
/// remapped), so nothing is lost and memory stays bounded.
public struct ObservationPublisher<Output: Sendable>: Publisher {
    /// Observations report errors in their values (`.error`), not as failures.
    public typealias Failure = Never

    /// Starts the observation: `send` delivers a value, `finish` ends the stream.
    typealias Start = @Sendable (_ send: @escaping @Sendable (Output) -> Void, _ finish: @escaping @Sendable () -> Void) -> ObservationToken
    /// Combines a value that is still waiting with the next one.
    typealias Merge = @Sendable (_ waiting: Output, _ next: Output) -> Output

    let start: Start
    let merge: Merge

    /// Attaches a subscriber.
    public func receive<S: Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Never {
        let subscription = Subscription(subscriber: AnySubscriber(subscriber), start: start, merge: merge)
        subscriber.receive(subscription: subscription)
    }

    private final class Subscription: OpenCombineShim.Subscription, @unchecked Sendable {
        // @unchecked Sendable: mutable state is guarded by `lock`; the
        // subscriber is called from one serial queue (the observation queue)
        // or from `request`, never both at once for the same value.
        private let lock = NSLock()
        private var subscriber: AnySubscriber<Output, Never>?
        private var demand = Subscribers.Demand.none
        private var waiting: Output?
        private var finishedWhileWaiting = false
        private var token: ObservationToken?
        private var started = false
        private let start: Start
        private let merge: Merge

        init(subscriber: AnySubscriber<Output, Never>, start: @escaping Start, merge: @escaping Merge) {
            self.subscriber = subscriber
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
            let pending = demand > .none ? waiting : nil
            if pending != nil {
                waiting = nil
                demand -= 1
            }
            let finishNow = pending != nil && finishedWhileWaiting
            lock.unlock()
            if let pending { deliver(pending) }
            if finishNow { finish() }
            if shouldStart {
                let token = start({ [weak self] value in self?.receive(value) }, { [weak self] in self?.finish() })
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

        private func receive(_ value: Output) {
            lock.lock()
            guard subscriber != nil else { lock.unlock(); return }
            if demand > .none, waiting == nil {
                demand -= 1
                lock.unlock()
                deliver(value)
            } else {
                waiting = waiting.map { merge($0, value) } ?? value
                lock.unlock()
            }
        }

        private func deliver(_ value: Output) {
            lock.lock()
            let subscriber = self.subscriber
            lock.unlock()
            guard let subscriber else { return }
            let more = subscriber.receive(value)
            lock.lock()
            demand += more
            lock.unlock()
        }

        private func finish() {
            lock.lock()
            if waiting != nil {
                finishedWhileWaiting = true
                lock.unlock()
                return
            }
            let subscriber = self.subscriber
            self.subscriber = nil
            let token = self.token
            self.token = nil
            lock.unlock()
            token?.invalidate()
            subscriber?.receive(completion: .finished)
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
    public func changesetPublisher(keyPaths: [String]?) -> ObservationPublisher<CollectionChange<Element>> {
        let results = self
        return ObservationPublisher(
            start: { send, _ in results.observe(keyPaths: keyPaths) { send($0) } },
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
            let token = results.observe { continuation.yield($0) }
            continuation.onTermination = { _ in token.invalidate() }
        }
    }

    /// The current rows as arrays, as an `AsyncSequence`: now, then after
    /// every commit that changes them.
    public var collections: AsyncStream<[Element]> {
        let results = self
        return AsyncStream { continuation in
            let token = results.observe { change in
                if let snapshot = change.results { continuation.yield(Array(snapshot)) } else { continuation.finish() }
            }
            continuation.onTermination = { _ in token.invalidate() }
        }
    }
}

extension CollectionChange {
    /// `first` followed by `second`, as one change.
    static func merge(_ first: CollectionChange, _ second: CollectionChange) -> CollectionChange {
        switch (first, second) {
        case (.error, _): return first
        case (_, .error), (_, .initial): return second
        case (.initial, .update(let results, _, _, _, _)): return .initial(results)
        case (.update(let results1, let d1, let i1, let m1, let mv1), .update(let results2, let d2, let i2, let m2, let mv2)):
            let oldCount = results1.count - i1.count + d1.count
            let composed = ChangesetBuilder.compose(
                .init(deletions: d1, insertions: i1, modifications: m1, moves: mv1.map { ($0.from, $0.to) }),
                .init(deletions: d2, insertions: i2, modifications: m2, moves: mv2.map { ($0.from, $0.to) }),
                oldCount: oldCount)
            return .update(results2, deletions: composed.deletions, insertions: composed.insertions,
                           modifications: composed.modifications, moves: composed.moves.map { Move(from: $0.0, to: $0.1) })
        }
    }
}

// MARK: - Objects

extension Store {
    /// The changes of one object (`.change` with the changed columns,
    /// `.deleted`), as RealmSwift's `objectChangeset`. Finishes after
    /// `.deleted` or `.error`.
    public func objectPublisher<M: Model>(_ type: M.Type, id: M.ID, keyPaths: [String]? = nil) -> ObservationPublisher<ObjectChange<M>> {
        ObservationPublisher(
            start: { send, finish in
                self.observeObject(type, id: id, keyPaths: keyPaths, on: nil) { event in
                    switch event {
                    case .initial(nil): send(.deleted); finish()
                    case .initial: break
                    case .change(let change):
                        send(change)
                        if case .change = change {} else { finish() }
                    }
                }
            },
            merge: { waiting, next in
                guard case .change(_, let earlier) = waiting, case .change(let model, let later) = next else { return next }
                var merged: [String: PropertyChange] = [:]
                for change in earlier { merged[change.name] = change }
                for change in later {
                    let old = merged[change.name]?.oldValue ?? change.oldValue
                    merged[change.name] = PropertyChange(name: change.name, oldValue: old, newValue: change.newValue)
                }
                let order = (earlier + later).map(\.name)
                var seen = Set<String>()
                let changes = order.filter { seen.insert($0).inserted }.compactMap { merged[$0] }.filter { $0.oldValue != $0.newValue }
                return .change(model, changes)
            })
    }

    /// The object now, then after every commit that changes it; nil when it
    /// does not exist or is deleted (then the stream finishes).
    public func objectValuePublisher<M: Model>(_ type: M.Type, id: M.ID) -> ObservationPublisher<M?> {
        ObservationPublisher(
            start: { send, finish in
                self.observeObject(type, id: id, keyPaths: nil, on: nil) { event in
                    switch event {
                    case .initial(let model):
                        send(model)
                        if model == nil { finish() }
                    case .change(.change(let model, _)): send(model)
                    case .change: send(nil); finish()
                    }
                }
            },
            merge: { _, next in next })
    }

    /// One property of one object: its value now, then each time it changes
    /// (changes to other properties or other rows emit nothing). Finishes
    /// when the object is deleted.
    ///
    /// ```swift
    /// store.propertyValuePublisher(Person.self, id: 1, \.firstName)
    ///     .receive(on: DispatchQueue.main)
    ///     .sink { name in ... }
    /// ```
    public func propertyValuePublisher<M: Model, Value: Equatable & Sendable>(
        _ type: M.Type, id: M.ID, _ keyPath: KeyPath<M, Value> & Sendable
    ) -> ObservationPublisher<Value> {
        ObservationPublisher(
            start: { send, finish in self.observeProperty(type, id: id, keyPath, send: send, finish: finish) },
            merge: { _, next in next })
    }

    private func observeProperty<M: Model, Value: Equatable & Sendable>(
        _ type: M.Type, id: M.ID, _ keyPath: KeyPath<M, Value> & Sendable,
        send: @escaping @Sendable (Value) -> Void, finish: @escaping @Sendable () -> Void
    ) -> ObservationToken {
        let last = Mutex<Value?>(nil)
        return observeObject(type, id: id, keyPaths: nil, on: nil) { event in
            let model: M?
            switch event {
            case .initial(let initial): model = initial
            case .change(.change(let changed, _)): model = changed
            case .change: model = nil
            }
            guard let model else { finish(); return }
            let value = model[keyPath: keyPath]
            let changed = last.withLock { last -> Bool in
                defer { last = value }
                return last != value
            }
            if changed { send(value) }
        }
    }
}
