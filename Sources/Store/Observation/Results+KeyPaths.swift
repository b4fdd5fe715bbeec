import Dispatch

/// The typed query API on `Results`: key-path filters, sorts, `distinct` and `keyPaths:`.
extension Results where Element: Model {
    /// Keeps the rows that match a typed filter (`\.age >= 18 && \.city == "Oslo"`),
    /// combined with any filter already set by AND.
    public func filter(_ filter: ModelFilter<Element>) -> Results {
        switch filter.filter {
        case .success(let filter): return self.filter(filter)
        case .failure(let error): return failing(error)
        }
    }

    /// Keeps the rows where a Bool property is true: `.filter(\.isDone)`.
    public func filter(_ keyPath: KeyPath<Element, Bool>) -> Results {
        filter(ModelColumn(keyPath).isTrue)
    }

    /// Keeps the rows that match a filter built from the model's properties,
    /// as Realm's `where { $0.age > 18 }`.
    public func `where`(_ build: (ModelQuery<Element>) -> ModelFilter<Element>) -> Results {
        filter(build(ModelQuery()))
    }

    /// Keeps the rows where a Bool property is true: `where { $0.isDone }`.
    public func `where`(_ build: (ModelQuery<Element>) -> ModelColumn<Element, Bool>) -> Results {
        filter(build(ModelQuery()).isTrue)
    }

    /// Sorts by a property (ties broken by primary key), as Realm's `sorted(by:ascending:)`.
    public func sorted(by keyPath: PartialKeyPath<Element>, ascending: Bool = true) -> Results {
        switch Element.column(for: keyPath) {
        case .success(let column): return sorted(byKeyPath: column, ascending: ascending)
        case .failure(let error): return failing(error)
        }
    }

    /// Keeps the first row of each combination of these properties' values (see `distinct(by:)` with columns).
    public func distinct(by keyPaths: [PartialKeyPath<Element>]) -> Results {
        switch Element.columns(for: keyPaths) {
        case .success(let columns): return distinct(by: columns)
        case .failure(let error): return failing(error)
        }
    }

    /// Observes the results, counting a row as modified only when one of
    /// these properties changes (Realm's `keyPaths:`); see `observe(keyPaths:on:scheduling:_:)`.
    public func observe(
        keyPaths: [PartialKeyPath<Element>], on queue: DispatchQueue = .main, scheduling: ObservationScheduling = .async,
        _ block: @escaping @Sendable (CollectionChange<Element>) -> Void
    ) -> ObservationToken {
        switch Element.columns(for: keyPaths) {
        case .success(let columns): return observe(keyPaths: columns, on: queue, scheduling: scheduling, block)
        case .failure(let error): return failing(error).observe(on: queue, scheduling: scheduling, block)
        }
    }
}

