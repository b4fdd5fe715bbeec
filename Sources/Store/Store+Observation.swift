import Dispatch

extension Store: ObservationHost {
    func register(_ observation: some StoreObservation & TokenBearing) -> ObservationToken {
        let token = makeToken(for: observation)
        observationCenter.add(observation)
        return token
    }

    /// The token that keeps an observation alive and removes it when invalidated.
    private func makeToken(for observation: some StoreObservation & TokenBearing) -> ObservationToken {
        let center = observationCenter
        let id = ObjectIdentifier(observation)
        let token = ObservationToken(observationID: id) { center.remove(id) }
        observation.token = token
        return token
    }

    func perform(_ work: @escaping @Sendable () -> Void) {
        observationCenter.queue.async(execute: work)
    }

    func registerImmediately(_ observation: some StoreObservation & TokenBearing, start: (Database, ReadPin) -> Void) -> ObservationToken {
        // Inside a read (the reader is in a transaction already): start asynchronously.
        guard !isOnReaderQueue else { return register(observation) }
        let center = observationCenter
        let token = makeToken(for: observation)
        // The first state is read on a snapshot the observation center pins
        // in its sequence of events; the snapshots delivered keep reading
        // their elements from it.
        guard let pin = try? center.join(observation) else {
            // No connection could be pinned: the observation queue reports why.
            center.add(observation)
            return token
        }
        pin.withDatabase { db in
            db.refreshSchemaIfChanged()
            start(db, pin)
        }
        pin.endEvent()
        return token
    }
}

extension Store {
    /// The live query of every row of a model's table, as Realm's `realm.objects(_:)`.
    ///
    /// - Parameter type: the model type.
    /// - Returns: the live query, to narrow, sort, read or observe.
    /// - Complexity: O(1); nothing is read until the results are.
    public func objects<M: Model>(_ type: M.Type) -> Results<M> {
        Results(host: self, table: M.tableName) { try $0.decode(M.self) }
    }

    /// The live query of every row of a table, as dynamic rows (for tools and the CLI).
    ///
    /// - Parameter table: the table's name.
    /// - Returns: the live query, to narrow, sort, read or observe.
    /// - Complexity: O(1); nothing is read until the results are.
    public func rows(in table: String) -> Results<Row> {
        Results(host: self, table: table) { $0.currentRow(droppingFirst: 1) }
    }

    /// Observes one object by primary key on the main actor: `block`
    /// receives a `.change` for each commit that changes it (with the
    /// changed columns' old and new values), then `.deleted` when it is
    /// deleted, as Realm's `object.observe`; on the main queue, as the main actor.
    ///
    /// - Parameters:
    ///   - type: the model type.
    ///   - id: the object's primary key.
    ///   - keyPaths: column names; when given, only changes to these columns
    ///     are reported, and only they are listed.
    ///   - block: receives the changes, as the main actor.
    /// - Returns: a token: keep it to keep observing.
    public func observe<M: Model>(
        _ type: M.Type, id: M.ID, keyPaths: [String]? = nil,
        _ block: @escaping @MainActor (ObjectChange<M>) -> Void
    ) -> ObservationToken {
        observe(type, id: id, keyPaths: keyPaths, on: .main, MainActorDelivery.deliver(block))
    }

    /// Observes one object on the main actor, reporting only changes to
    /// these properties (Realm's `observe(keyPaths:)`):
    /// `store.observe(Person.self, id: 7, keyPaths: [\.age]) { ... }`. A key
    /// path that is not a column delivers `.error` naming it.
    ///
    /// - Parameters:
    ///   - type: the model type.
    ///   - id: the object's primary key.
    ///   - keyPaths: the properties whose changes are reported.
    ///   - block: receives the changes, as the main actor.
    /// - Returns: a token: keep it to keep observing.
    public func observe<M: Model>(
        _ type: M.Type, id: M.ID, keyPaths: [PartialKeyPath<M>],
        _ block: @escaping @MainActor (ObjectChange<M>) -> Void
    ) -> ObservationToken {
        observe(type, id: id, keyPaths: keyPaths, on: .main, MainActorDelivery.deliver(block))
    }

    /// Observes one object by primary key: `block` receives a `.change` for
    /// each commit that changes it (with the changed columns' old and new
    /// values), then `.deleted` when it is deleted, as Realm's `object.observe`.
    ///
    /// - Parameters:
    ///   - type: the model type.
    ///   - id: the object's primary key.
    ///   - keyPaths: column names; when given, only changes to these columns
    ///     are reported, and only they are listed.
    ///   - queue: where `block` runs.
    ///   - block: receives the changes.
    ///
    /// - Returns: a token: keep it to keep observing.
    /// - Complexity: per commit that changes the table, one read of the row by
    ///   primary key: O(log n).
    public func observe<M: Model>(
        _ type: M.Type, id: M.ID, keyPaths: [String]? = nil, on queue: DispatchQueue,
        _ block: @escaping @Sendable (ObjectChange<M>) -> Void
    ) -> ObservationToken {
        observeObject(type, id: id, keyPaths: keyPaths, on: queue) { event in
            if case .change(let change) = event { block(change) } else if case .initial(nil) = event { block(.deleted) }
        }
    }

    /// Observes one object, reporting only changes to these properties
    /// (Realm's `observe(keyPaths:)`): `store.observe(Person.self, id: 7, keyPaths: [\.age]) { ... }`.
    /// A key path that is not a column delivers `.error` naming it.
    ///
    /// - Parameters:
    ///   - type: the model type.
    ///   - id: the object's primary key.
    ///   - keyPaths: the properties whose changes are reported.
    ///   - queue: where `block` runs.
    ///   - block: receives the changes.
    /// - Returns: a token: keep it to keep observing.
    /// - Complexity: as `observe(_:id:keyPaths:on:_:)` with column names.
    public func observe<M: Model>(
        _ type: M.Type, id: M.ID, keyPaths: [PartialKeyPath<M>], on queue: DispatchQueue,
        _ block: @escaping @Sendable (ObjectChange<M>) -> Void
    ) -> ObservationToken {
        switch M.columns(for: keyPaths) {
        case .success(let columns):
            return observe(type, id: id, keyPaths: columns, on: queue, block)
        case .failure(let error):
            // Nothing to observe: the error arrives on the queue, unless the token is invalidated first.
            let token = ObservationToken(observationID: nil) {}
            queue.async { [weak token] in if let token, !token.isInvalidated { block(.error(error)) } }
            return token
        }
    }

    func observeObject<M: Model>(
        _ type: M.Type, id: M.ID, keyPaths: [String]?, on queue: DispatchQueue,
        _ block: @escaping @Sendable (ObjectEvent<M>) -> Void
    ) -> ObservationToken {
        register(ObjectObservation<M>(id: id.sqliteValue, keyPaths: keyPaths, delivery: Delivery(queue: queue, block: block)))
    }
}

extension Store {
    /// Waits until every commit so far has been delivered to observers
    /// (checking first for other processes' commits), including the main
    /// queue's deliveries when called from another thread. For tests and tools.
    public func waitForObservers() {
        if observationCenter.isObserving { observationCenter.commits.checkNow() }
        observationCenter.drain()
        if !MainQueue.isCurrent { DispatchQueue.main.sync {} }
    }
}
