import Foundation
import OpenCombineShim

/// Publishers of one object and of one property.
extension Store {
    /// The changes of one object (`.change` with the changed columns,
    /// `.deleted`), as RealmSwift's `objectChangeset`. Finishes after
    /// `.deleted` or `.error`.
    ///
    /// - Parameters:
    ///   - type: the model type.
    ///   - id: the object's primary key.
    ///   - keyPaths: the columns whose changes are reported; all when nil.
    /// - Returns: the publisher.
    /// - Complexity: per commit that changes the table, one read by primary key: O(log n).
    public func objectPublisher<M: Model>(_ type: M.Type, id: M.ID, keyPaths: [String]? = nil) -> ObservationPublisher<ObjectChange<M>> {
        ObservationPublisher(
            start: { queue, send, finish in
                self.observeObject(type, id: id, keyPaths: keyPaths, on: queue) { event in
                    switch event {
                    case .initial(nil): send(.deleted); finish()
                    case .initial: break
                    case .change(let change):
                        send(change)
                        if case .deleted = change { finish() }
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
                return changes.isEmpty ? nil : .change(model, changes)
            })
    }

    /// The object now, then after every commit that changes it; nil when it
    /// does not exist or is deleted (then the stream finishes).
    ///
    /// - Parameters:
    ///   - type: the model type.
    ///   - id: the object's primary key.
    /// - Returns: the publisher.
    /// - Complexity: per commit that changes the table, one read by primary key: O(log n).
    public func objectValuePublisher<M: Model>(_ type: M.Type, id: M.ID) -> ObservationPublisher<M?> {
        ObservationPublisher(
            start: { queue, send, finish in
                self.observeObject(type, id: id, keyPaths: nil, on: queue) { event in
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
    ///
    /// - Parameters:
    ///   - type: the model type.
    ///   - id: the object's primary key.
    ///   - keyPath: the property.
    /// - Returns: the publisher.
    /// - Complexity: per commit that changes the column, one read by primary key: O(log n).
    public func propertyValuePublisher<M: Model, Value: Equatable & Sendable>(
        _ type: M.Type, id: M.ID, _ keyPath: KeyPath<M, Value> & Sendable
    ) -> ObservationPublisher<Value> {
        ObservationPublisher(
            start: { queue, send, finish in self.observeProperty(type, id: id, keyPath, on: queue, send: send, finish: finish) },
            merge: { _, next in next })
    }

    private func observeProperty<M: Model, Value: Equatable & Sendable>(
        _ type: M.Type, id: M.ID, _ keyPath: KeyPath<M, Value> & Sendable, on queue: DispatchQueue,
        send: @escaping @Sendable (Value) -> Void, finish: @escaping @Sendable () -> Void
    ) -> ObservationToken {
        let last = Mutex<Value?>(nil)
        return observeObject(type, id: id, keyPaths: nil, on: queue) { event in
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
