import Dispatch

/// A live query: a table's rows, filtered and sorted, that can be fetched
/// and observed, as Realm's `Results`.
///
/// ```swift
/// let adults = store.objects(Person.self)
///     .filter("age >= $0", 18)
///     .sorted(byKeyPath: "last_name")
/// let now = try adults.fetch()
/// let token = adults.observe { change in ... }          // CollectionChange<Person>
/// adults.changesetPublisher.receive(on: DispatchQueue.main).sink { ... }
/// ```
///
/// Results are values: `filter` and `sorted` return new ones. Ties in the
/// order are broken by primary key. A query string that does not parse is
/// reported when the results are fetched (`fetch()` throws) or observed
/// (`.error`), so that chains read as in Realm.
public struct Results<Element: Sendable>: Sendable {
    let store: Store
    let table: String
    let decode: @Sendable (StatementDecoder) throws -> Element
    /// The filter, or the error from parsing it.
    var filter: Result<Filter, StoreError>?
    var orderings: [Ordering] = []
    var limitCount: Int?

    init(store: Store, table: String, decode: @escaping @Sendable (StatementDecoder) throws -> Element) {
        self.store = store
        self.table = table
        self.decode = decode
    }

    /// Keeps the rows that match a query string (see `Filter`), combined
    /// with any filter already set by AND.
    public func filter(_ query: String, _ arguments: any SQLiteValueConvertible...) -> Results {
        do {
            return filter(try Filter(query, arguments: arguments.map(\.sqliteValue)))
        } catch {
            var copy = self
            copy.filter = .failure(error as? StoreError ?? StoreError(code: .invalidQuery, message: "\(error)"))
            return copy
        }
    }

    /// Keeps the rows that match a filter, combined with any filter already set by AND.
    public func filter(_ filter: Filter) -> Results {
        var copy = self
        switch self.filter {
        case .success(let existing): copy.filter = .success(existing && filter)
        case .failure: break
        case nil: copy.filter = .success(filter)
        }
        return copy
    }

    /// Sorts by a column (Realm's name for it), then by any earlier sort keys.
    public func sorted(byKeyPath column: String, ascending: Bool = true) -> Results {
        sorted(by: [Ordering(column, descending: !ascending)])
    }

    /// Sorts by these orderings; ties are broken by primary key.
    public func sorted(by orderings: [Ordering]) -> Results {
        var copy = self
        copy.orderings = orderings
        return copy
    }

    /// Keeps only the first `count` rows. A limited query is re-run and
    /// diffed after each commit that touches its table (O(n)), as the
    /// incremental path cannot know which row slides into the window.
    public func limit(_ count: Int) -> Results {
        var copy = self
        copy.limitCount = max(0, count)
        return copy
    }

    /// The current rows, read on the store's reader.
    public func fetch() throws -> [Element] {
        let filter = try self.filter?.get()
        return try store.read { db in
            let info = try db.tableInfo(table)
            // The same columns as the live query reads (its decoders expect the rowid first).
            let (sql, arguments) = try db.selectSQL(table: info, columns: "rowid AS \(QueryPlan.rowIDColumn), *",
                                                    filter: filter, orderBy: orderings, limit: limitCount)
            let statement = try db.connection.cachedStatement(sql: sql)
            defer { statement.reset() }
            try statement.bind(arguments)
            let decoder = StatementDecoder(statement: statement, tableName: info.name)
            var elements: [Element] = []
            while try statement.step() { elements.append(try decode(decoder)) }
            return elements
        }
    }

    /// Observes the results: `block` receives `.initial` with the current
    /// rows, then one `.update` per commit that changes them, in commit
    /// order, and `.error` if the query can no longer run.
    ///
    /// - Parameters:
    ///   - keyPaths: column names; when given, a row counts as modified only
    ///     when one of these columns changes (Realm's `keyPaths:`). Rows
    ///     entering, leaving or moving are always reported.
    ///   - queue: where `block` runs (a serial queue keeps the order); by
    ///     default, the store's observation queue. Do not write to the store
    ///     synchronously from that queue.
    /// - Returns: a token: keep it to keep observing.
    public func observe(
        keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
        _ block: @escaping @Sendable (CollectionChange<Element>) -> Void
    ) -> ObservationToken {
        let observation = ResultsObservation(results: self, keyPaths: keyPaths, queue: queue, block: block)
        return store.register(observation)
    }
}

extension Store {
    /// The live query of every row of a model's table, as Realm's `realm.objects(_:)`.
    public func objects<M: Model>(_ type: M.Type) -> Results<M> {
        Results(store: self, table: M.tableName) { try $0.decode(M.self) }
    }

    /// The live query of every row of a table, as dynamic rows (for tools and the CLI).
    public func rows(in table: String) -> Results<Row> {
        Results(store: self, table: table) { $0.currentRow(droppingFirst: 1) }
    }
}

/// Keeps one `Results` observer up to date.
final class ResultsObservation<Element: Sendable>: StoreObservation, FailableObservation, TokenBearing, @unchecked Sendable {
    // @unchecked Sendable: `live` and `failed` are only touched on the
    // observation queue; the rest is immutable.
    private let results: Results<Element>
    private let keyPaths: [String]?
    private let delivery: Delivery<CollectionChange<Element>>
    private var live: LiveQuery<Element>?
    private var table = ""
    private var failed = false
    weak var token: ObservationToken?

    init(results: Results<Element>, keyPaths: [String]?, queue: DispatchQueue?, block: @escaping @Sendable (CollectionChange<Element>) -> Void) {
        self.results = results
        self.keyPaths = keyPaths
        delivery = Delivery(queue: queue, block: block)
    }

    private func send(_ change: CollectionChange<Element>) {
        delivery.send(change, unless: token)
    }

    func start(_ db: Database) {
        do {
            let filter = try results.filter?.get()
            let plan = try QueryPlan(db: db, table: results.table, filter: filter, orderBy: results.orderings,
                                     limit: results.limitCount, keyPaths: keyPaths)
            table = plan.table.name
            let live = try LiveQuery(plan: plan, decode: results.decode, db: db)
            self.live = live
            send(.initial(live.snapshot))
        } catch {
            fail(error as? StoreError ?? StoreError(code: .error, message: "\(error)"))
        }
    }

    func update(_ db: Database, changes: [String: Set<Int64>]?, silent: Bool) {
        guard !failed, let live else { return }
        let changed: Set<Int64>?
        if let changes {
            guard let rowIDs = changes[table], !rowIDs.isEmpty else { return }
            changed = rowIDs
        } else {
            changed = nil
        }
        do {
            guard let changeset = try live.apply(changed: changed, db: db), !silent else { return }
            send(.update(live.snapshot, deletions: changeset.deletions, insertions: changeset.insertions,
                         modifications: changeset.modifications,
                         moves: changeset.moves.map { CollectionChange<Element>.Move(from: $0.0, to: $0.1) }))
        } catch {
            fail(error as? StoreError ?? StoreError(code: .error, message: "\(error)"))
        }
    }

    func fail(_ error: StoreError) {
        guard !failed else { return }
        failed = true
        send(.error(error))
    }
}

extension StatementDecoder {
    /// The current row as a dynamic row, leaving out the first `count` columns.
    func currentRow(droppingFirst count: Int) -> Row {
        let names = Array(columnNames.dropFirst(count))
        let values = (count..<columnNames.count).map { value(at: Int32($0)) }
        return Row(columns: names, values: values)
    }
}
