import Dispatch

/// The typed query API on `Results`: key-path filters, sorts, `distinct` and `keyPaths:`.
extension Results where Element: Model {
    /// Keeps the rows that match a typed filter (`\.age >= 18 && \.city == "Oslo"`),
    /// combined with any filter already set by AND.
    ///
    /// - Parameter filter: the typed filter.
    /// - Returns: the narrowed results (a new value).
    /// - Complexity: O(1); the filter runs in SQLite when the results are read.
    public func filter(_ filter: ModelFilter<Element>) -> Results {
        switch filter.filter {
        case .success(let filter): return self.filter(filter)
        case .failure(let error): return failing(error)
        }
    }

    /// Keeps the rows where a Bool property is true: `.filter(\.isDone)`.
    ///
    /// - Parameter keyPath: a `Bool` property.
    /// - Returns: the narrowed results (a new value).
    /// - Complexity: O(1); the filter runs in SQLite when the results are read.
    public func filter(_ keyPath: KeyPath<Element, Bool>) -> Results {
        filter(ModelColumn(keyPath).isTrue)
    }

    /// Keeps the rows that match a filter built from the model's properties,
    /// as Realm's `where { $0.age > 18 }`.
    ///
    /// - Parameter build: builds the filter from the model's properties.
    /// - Returns: the narrowed results (a new value).
    /// - Complexity: O(1); the filter runs in SQLite when the results are read.
    public func `where`(_ build: (ModelQuery<Element>) -> ModelFilter<Element>) -> Results {
        filter(build(ModelQuery()))
    }

    /// Keeps the rows where a Bool property is true: `where { $0.isDone }`.
    ///
    /// - Parameter build: picks a `Bool` property.
    /// - Returns: the narrowed results (a new value).
    /// - Complexity: O(1); the filter runs in SQLite when the results are read.
    public func `where`(_ build: (ModelQuery<Element>) -> ModelColumn<Element, Bool>) -> Results {
        filter(build(ModelQuery()).isTrue)
    }

    /// Sorts by properties, most significant first (ties broken by primary key), as
    /// Realm's `sorted(by:ascending:)`:
    ///
    /// ```swift
    /// store.objects(Person.self).sorted(by: \.lastName, \.firstName)
    /// ```
    ///
    /// - Parameters:
    ///   - keyPaths: stored properties (their columns).
    ///   - ascending: the direction of every key.
    /// - Returns: the sorted results (a new value).
    /// - Complexity: O(1); observed, O(log n) per changed row.
    public func sorted(by keyPaths: PartialKeyPath<Element>..., ascending: Bool = true) -> Results {
        switch Element.columns(for: keyPaths) {
        case .success(let columns): return sorted(by: columns.map { Ordering($0, descending: !ascending) })
        case .failure(let error): return failing(error)
        }
    }

    /// Keeps the first row of each combination of these properties' values (see `distinct(by:)` with columns).
    ///
    /// - Parameter keyPaths: stored properties whose values make a row distinct.
    /// - Returns: the results with duplicates left out (a new value).
    /// - Complexity: O(1); observed, O(n) per commit that touches the table.
    public func distinct(by keyPaths: [PartialKeyPath<Element>]) -> Results {
        switch Element.columns(for: keyPaths) {
        case .success(let columns): return distinct(by: columns)
        case .failure(let error): return failing(error)
        }
    }

    /// Observes the results on the main actor, counting a row as modified
    /// only when one of these properties changes (Realm's `keyPaths:`); see
    /// `observe(keyPaths:scheduling:_:)` with column names.
    ///
    /// - Parameters:
    ///   - keyPaths: the properties whose changes count as a modification.
    ///   - scheduling: whether the first result comes before `observe` returns (on the main actor).
    ///   - block: receives the first result, then each change, as the main actor.
    /// - Returns: a token: keep it to keep observing.
    public func observe(
        keyPaths: [PartialKeyPath<Element>], scheduling: ObservationScheduling = .async,
        _ block: @escaping @MainActor (CollectionChange<Element>) -> Void
    ) -> ObservationToken {
        observe(keyPaths: keyPaths, on: .main, scheduling: MainActorDelivery.scheduling(scheduling), MainActorDelivery.deliver(block))
    }

    /// Observes the results, counting a row as modified only when one of
    /// these properties changes (Realm's `keyPaths:`); see `observe(keyPaths:on:scheduling:_:)`.
    ///
    /// - Parameters:
    ///   - keyPaths: the properties whose changes count as a modification.
    ///   - queue: where `block` runs.
    ///   - scheduling: whether the first result comes before `observe` returns.
    ///   - block: receives the first result, then each change.
    /// - Returns: a token: keep it to keep observing.
    /// - Complexity: as `observe(keyPaths:on:scheduling:_:)` with column names.
    public func observe(
        keyPaths: [PartialKeyPath<Element>], on queue: DispatchQueue, scheduling: ObservationScheduling = .async,
        _ block: @escaping @Sendable (CollectionChange<Element>) -> Void
    ) -> ObservationToken {
        switch Element.columns(for: keyPaths) {
        case .success(let columns): return observe(keyPaths: columns, on: queue, scheduling: scheduling, block)
        case .failure(let error): return failing(error).observe(on: queue, scheduling: scheduling, block)
        }
    }
}

