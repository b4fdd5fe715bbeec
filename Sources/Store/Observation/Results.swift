import Dispatch

/// A live query: a table's rows, filtered and sorted, that can be fetched
/// and observed, as Realm's `Results`.
///
/// ```swift
/// let adults = try store.objects(Person.self)   // a typo in the query throws here
///     .filter("age >= $0", 18)
///     .sorted(byKeyPath: "last_name")
/// let now = try adults.fetch()
/// let token = adults.observe { change in ... }          // CollectionChange<Person>, on the main actor
/// ```
///
/// Results are values: `filter` and `sorted` return new ones. Ties in the
/// order are broken by primary key. A query string is checked where it is
/// given: `filter(_:_:)` throws when it does not parse or names a column the
/// table does not have, with a caret under the problem. What only the
/// database can find out later (its table dropped, a value it cannot
/// decode) is reported when the results are fetched (`fetch()` throws) or
/// observed (`.error`).
public struct Results<Element: Sendable>: Sendable {
    let host: any ObservationHost
    let table: String
    let decode: @Sendable (StatementDecoder) throws -> Element
    /// The filter, or the error from parsing it.
    var filter: Result<Filter, StoreError>?
    var orderings: [Ordering] = []
    var limitCount: Int?
    /// Columns of `distinct(by:)`.
    var distinctColumns: [String] = []
    /// The window of the result to follow (`window(_:)`).
    var windowSpec: ResultsWindow?

    init(host: any ObservationHost, table: String, decode: @escaping @Sendable (StatementDecoder) throws -> Element) {
        self.host = host
        self.table = table
        self.decode = decode
    }

    /// Keeps the rows that match a query string (see `Filter`), combined
    /// with any filter already set by AND.
    ///
    /// - Parameters:
    ///   - query: the query, in the query language (`"age >= $0 AND city ==[c] $1"`).
    ///   - arguments: the values of `$0`, `$1`, ... (bound, never spliced into the SQL).
    /// - Returns: the narrowed results (a new value: this one is unchanged).
    /// - Throws: `StoreError`, a caret under the problem: `.invalidQuery`
    ///   when the query does not parse or compares a column with a value it
    ///   cannot hold; `.unknownColumn` when it names a column or relationship
    ///   the table does not have (checked now, against the schema, as Realm
    ///   checks a predicate's key paths); `.unknownTable` when the results'
    ///   table does not exist.
    /// - Complexity: one read of the schema (cached); the filter runs in
    ///   SQLite when the results are read.
    public func filter(_ query: String, _ arguments: any SQLiteValueConvertible...) throws -> Results {
        let narrowed = filter(try Filter(query, arguments: arguments.map(\.sqliteValue)))
        try narrowed.check()
        return narrowed
    }

    /// Compiles the query against the database's schema now, so that a
    /// column that does not exist is reported where it was named.
    func check() throws {
        let filter = try self.filter?.get()
        _ = try host.read { db in try select(in: db, filter: filter).build() }
    }

    /// These results, failing with `error` when fetched or observed (a bad
    /// query string, a key path that is not a column).
    func failing(_ error: StoreError) -> Results {
        var copy = self
        copy.filter = .failure(error)
        return copy
    }

    /// Keeps the rows that match a filter, combined with any filter already set by AND.
    ///
    /// - Parameter filter: the filter.
    /// - Returns: the narrowed results (a new value).
    /// - Complexity: O(1); the filter runs in SQLite when the results are read.
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
    ///
    /// - Parameters:
    ///   - column: the column to sort by.
    ///   - ascending: the direction.
    /// - Returns: the sorted results (a new value).
    /// - Complexity: O(1); SQLite sorts when the results are read, and a live
    ///   query keeps the order incrementally: O(log n) per changed row.
    public func sorted(byKeyPath column: String, ascending: Bool = true) -> Results {
        sorted(by: [Ordering(column, descending: !ascending)])
    }

    /// Sorts by these orderings; ties are broken by primary key.
    ///
    /// - Parameter orderings: the sort keys, most significant first.
    /// - Returns: the sorted results (a new value).
    /// - Complexity: O(1); as `sorted(byKeyPath:ascending:)` when read or observed.
    public func sorted(by orderings: [Ordering]) -> Results {
        var copy = self
        copy.orderings = orderings
        return copy
    }

    /// Keeps only the first `count` rows. A limited query is re-run and
    /// diffed after each commit that touches its table (O(n)), as the
    /// incremental path cannot know which row slides into the window.
    ///
    /// - Parameter count: the number of rows to keep.
    /// - Returns: the limited results (a new value).
    /// - Complexity: O(1); observed, O(n) per commit that touches the table.
    public func limit(_ count: Int) -> Results {
        var copy = self
        copy.limitCount = Swift.max(0, count)
        return copy
    }

    /// Keeps, of the rows with the same values in these columns, only the
    /// first in the order (ties broken by primary key), as Realm's
    /// `distinct(by:)`; NULLs count as one value. A live query with
    /// `distinct` is re-run and diffed after each commit that touches its
    /// table (O(n)), as one row's change can change which row comes first.
    ///
    /// - Parameter columns: the columns whose values make a row distinct.
    /// - Returns: the results with duplicates left out (a new value).
    /// - Complexity: O(1); observed, O(n) per commit that touches the table.
    public func distinct(by columns: [String]) -> Results {
        var copy = self
        copy.distinctColumns = columns
        return copy
    }

    /// The current rows, read on the store's reader.
    ///
    /// - Returns: the rows, in order.
    /// - Throws: `StoreError` when the query is invalid (a caret under the
    ///   problem) or a read fails.
    /// - Complexity: one SQL query; O(n) decodes for n rows.
    public func fetch() throws -> [Element] {
        try fetch { _ in }
    }

    /// Runs the query with the builder adjusted by `configure` (an offset, a
    /// reversed order, a limit of one) and decodes every row it returns.
    func fetch(_ configure: (inout SelectBuilder) -> Void) throws -> [Element] {
        let filter = try self.filter?.get()
        return try host.read { db in
            var select = try self.select(in: db, filter: filter)
            // The same columns as the live query reads (its decoders expect the rowid first).
            select.columns = .rowIDAndAll
            configure(&select)
            if windowSpec != nil { return try windowElements(db, filter: filter, select) }
            let (sql, arguments) = try select.build()
            let statement = try db.cachedStatement(sql: sql)
            defer { statement.reset() }
            try statement.bind(arguments)
            let decoder = StatementDecoder(statement: statement, tableName: select.table.name)
            var elements: [Element] = []
            while try statement.step() { elements.append(try decode(decoder)) }
            return elements
        }
    }

    /// The number of rows, counted by SQLite (`SELECT count(*)`), not by
    /// fetching them.
    ///
    /// - Returns: the number of rows that match.
    /// - Throws: `StoreError` when the query is invalid or a read fails.
    /// - Complexity: one `count(*)` query: nothing is decoded.
    public func fetchCount() throws -> Int {
        if windowSpec != nil { return try fetch().count }
        let filter = try self.filter?.get()
        let count = try host.read { db in
            var select = try self.select(in: db, filter: filter)
            select.limit = nil   // `count(*) ... LIMIT n` limits the count's one row, not the rows counted
            return try db.fetchCount(select)
        }
        return limitCount.map { Swift.min($0, count) } ?? count
    }

    /// The query as a SELECT: filter, order, limit, distinct.
    func select(in db: Database, filter: Filter?) throws -> SelectBuilder {
        var select = SelectBuilder(table: try db.tableInfo(table), schema: db.schemaLookup)
        (select.filter, select.orderBy, select.limit, select.distinct) = (filter, orderings, limitCount, distinctColumns)
        return select
    }

    /// The live-query plan of these results, counting as modified only changes to `keyPaths` (all columns when nil).
    func plan(in db: Database, keyPaths: [String]?) throws -> QueryPlan {
        try QueryPlan(db: db, table: table, filter: try filter?.get(), orderBy: orderings, limit: limitCount, distinct: distinctColumns,
                      keyPaths: keyPaths)
    }

    /// Observes the results on the main actor: `block` receives `.initial`
    /// with the current rows, then one `.update` per commit that changes
    /// them, in commit order, on the main queue, isolated to the main actor
    /// (it can update a `@MainActor` view or view model directly).
    ///
    /// ```swift
    /// @MainActor final class Inbox {
    ///     var count = 0
    ///     var token: ObservationToken?
    ///     func start(_ store: Store) {
    ///         token = store.objects(Person.self).observe { [weak self] change in
    ///             if case .initial(let people) = change { self?.count = people.count }
    ///         }
    ///     }
    /// }
    /// ```
    ///
    /// See `observe(keyPaths:on:scheduling:_:)` for errors, `keyPaths`
    /// and the cost; use it to be called on another queue.
    ///
    /// - Parameters:
    ///   - keyPaths: column names; when given, a row counts as modified only
    ///     when one of these columns changes.
    ///   - scheduling: `.immediate` delivers `.initial` before this returns
    ///     when called on the main actor (elsewhere, asynchronously).
    ///   - block: receives the changes, as the main actor.
    /// - Returns: a token: keep it to keep observing.
    public func observe(
        keyPaths: [String]? = nil, scheduling: ObservationScheduling = .async,
        _ block: @escaping @MainActor (CollectionChange<Element>) -> Void
    ) -> ObservationToken {
        observe(keyPaths: keyPaths, on: .main, scheduling: MainActorDelivery.scheduling(scheduling), MainActorDelivery.deliver(block))
    }

    /// Observes the results: `block` receives `.initial` with the current
    /// rows, then one `.update` per commit that changes them, in commit
    /// order, on `queue`.
    ///
    /// When the query cannot run (its table was dropped, a stored value
    /// cannot be decoded), `block` receives `.error`; observing goes on, and
    /// once the query runs again it receives `.initial` with the new rows
    /// (apply it as a fresh start, as for the first one).
    ///
    /// - Parameters:
    ///   - keyPaths: column names; when given, a row counts as modified only
    ///     when one of these columns changes (Realm's `keyPaths:`). Rows
    ///     entering, leaving or moving are always reported.
    ///   - queue: where `block` runs, one call at a time, in commit order.
    ///   - scheduling: `.immediate` delivers `.initial` before this returns,
    ///     on the calling thread (call it from `queue`).
    ///   - block: receives the changes.
    /// - Returns: a token: keep it to keep observing.
    /// - Complexity: the first result, one SQL query whose ordered rows
    ///   build the tree in one pass (O(n), nothing decoded until read).
    ///   Then, per commit that changes k of its rows, O(k log n) when the commit's rows are named
    ///   (this store's writes, logged or tracked writers), O(n) hashes
    ///   compared when they are not (another connection's untracked
    ///   commit), and a re-run and diff for `limit` and `distinct`. A
    ///   commit to other tables costs nothing.
    public func observe(
        keyPaths: [String]? = nil, on queue: DispatchQueue, scheduling: ObservationScheduling = .async,
        _ block: @escaping @Sendable (CollectionChange<Element>) -> Void
    ) -> ObservationToken {
        let observation = ResultsObservation(results: self, keyPaths: keyPaths, presenter: FlatPresenter<Element>(),
                                             delivery: Delivery(queue: queue, block: block))
        let token = host.start(observation, scheduling: scheduling) { block($0) }
        if windowSpec != nil { token.window = WindowHandle(observation, host: host) }
        return token
    }
}

extension ChangedRows {
    /// How a table changed, matching its name as SQLite does (ASCII case-insensitively).
    func change(matching table: String) -> TableChange? {
        if let change = change(in: table) { return change }
        let lowered = table.lowercased()
        return tables.first { $0.key.lowercased() == lowered }?.value
    }
}

extension StatementDecoder {
    /// The current row as a dynamic row, leaving out the first `count`
    /// columns (and a live query's score, after the table's columns).
    func currentRow(droppingFirst count: Int) -> Row {
        let end = columnNames.last == SelectBuilder.scoreColumn ? columnNames.count - 1 : columnNames.count
        let names = Array(columnNames[count..<end])
        let values = (count..<end).map { value(at: Int32($0)) }
        return Row(columns: names, values: values)
    }
}
