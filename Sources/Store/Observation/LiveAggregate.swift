import Dispatch
import SluiceNaming

/// A count, sum, minimum, maximum or average over live results, kept up to
/// date after every commit from the rows the commit changed (O(k log n) for
/// k changed rows, never a recount), as SQL would compute it over the
/// current rows:
///
/// ```swift
/// let heavy = store.objects(PackageContent.self).filter(\.weight > 1000)
/// let token = heavy.aggregates.count.observe { count in print(count) }   // Result<Int, StoreError>
/// let total = heavy.aggregates.sum(of: \.weight)                         // LiveAggregate<Int>
/// for try await grams in total.values { ... }
/// let shown = LiveValue(total)              // SluiceViewModels: @Observable, on the main actor
/// ```
///
/// Values follow SQLite's aggregate functions: NULLs are left out; `sum`
/// of integers is an integer (a real once any value is a real, or when an
/// integer sum overflows, where SQLite's `sum()` would fail); `min` and
/// `max` compare as SQLite does (numbers, then text by the column's
/// collation, then blobs). An incremental sum of reals can differ from a
/// recomputed one in the last bits.
public struct LiveAggregate<Value: Sendable>: Sendable {
    let results: Results<SQLiteValue>
    let function: AggregateFunction
    let column: String?
    let convert: @Sendable (SQLiteValue) -> Value

    /// The value now, computed by SQLite (`SELECT count(*)`, `sum(...)`, ... over the query).
    ///
    /// - Throws: why the query cannot run (an unknown column, a filter that does not parse).
    ///
    /// - Returns: the value.
    /// - Complexity: one SQL query over the rows (O(n), less with an index).
    public func fetch() throws -> Value {
        let filter = try results.filter?.get()
        let value = try results.host.read { db -> SQLiteValue in
            var select = try results.select(in: db, filter: filter)
            select.columns = .rowIDAndAll
            let table = select.table
            let (inner, arguments) = try select.build()
            let expression: String
            if let column {
                guard let resolved = table.column(named: column) else { throw AggregatePresenter.unknown(column, in: table) }
                expression = "\(function.sqlName)(\(quoteIdentifier(resolved.name)))"
            } else {
                expression = "count(*)"
            }
            return try db.fetchRows(sql: "SELECT \(expression) FROM (\(inner))", arguments: arguments).first?.values.first ?? .null
        }
        return convert(value)
    }

    /// Observes the value on the main actor: `block` receives it (first
    /// asynchronously, unless `scheduling` says otherwise), then after each
    /// commit that changes it, on the main queue, as the main actor;
    /// `.failure` when the query cannot run.
    ///
    /// - Parameters:
    ///   - scheduling: whether the first value comes before `observe` returns (on the main actor).
    ///   - block: receives each value (`.success`) or why the query cannot run (`.failure`).
    /// - Returns: a token: keep it to keep observing.
    public func observe(
        scheduling: ObservationScheduling = .async,
        _ block: @escaping @MainActor (Result<Value, StoreError>) -> Void
    ) -> ObservationToken {
        observe(on: .main, scheduling: MainActorDelivery.scheduling(scheduling), MainActorDelivery.deliver(block))
    }

    /// Observes the value: `block` receives it now (unless `scheduling`
    /// says otherwise, asynchronously), then after each commit that changes
    /// it, on `queue`; `.failure` when the query cannot run.
    ///
    /// - Returns: a token: keep it to keep observing.
    ///
    /// - Parameters:
    ///   - queue: where `block` runs.
    ///   - scheduling: whether the first value comes before `observe` returns.
    ///   - block: receives each value (`.success`) or why the query cannot run (`.failure`).
    /// - Complexity: the first value, one read of the rows; then, per commit,
    ///   O(k) (count, sum, average) or O(k log d) (min, max over d distinct
    ///   values) for k changed rows: the query is not re-run.
    public func observe(
        on queue: DispatchQueue, scheduling: ObservationScheduling = .async,
        _ block: @escaping @Sendable (Result<Value, StoreError>) -> Void
    ) -> ObservationToken {
        let convert = self.convert
        let deliver: @Sendable (Result<SQLiteValue, StoreError>) -> Void = { block($0.map(convert)) }
        // Only the aggregated column's changes matter (none for a count).
        let observation = ResultsObservation(results: results, keyPaths: column.map { [$0] } ?? [],
                                             presenter: AggregatePresenter(function: function, column: column),
                                             delivery: Delivery(queue: queue, block: deliver))
        return results.host.start(observation, scheduling: scheduling) { deliver($0) }
    }

    /// The value now and after each commit that changes it, as an
    /// `AsyncSequence`; it throws when the query cannot run.
    public var values: AsyncThrowingStream<Value, Error> {
        let aggregate = self
        return AsyncThrowingStream { continuation in
            let token = aggregate.observe(on: DispatchQueue(label: "sluice.stream")) { result in
                switch result {
                case .success(let value): continuation.yield(value)
                case .failure(let error): continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in token.invalidate() }
        }
    }
}

enum AggregateFunction: Sendable {
    case count, sum, min, max, average

    var sqlName: String {
        switch self {
        case .count: return "count"
        case .sum: return "sum"
        case .min: return "min"
        case .max: return "max"
        case .average: return "avg"
        }
    }
}

/// The live aggregates of some results: `results.aggregates.count`, `.sum(of:)`, ...
public struct ResultsAggregates<Element: Sendable>: Sendable {
    let results: Results<Element>

    /// The results as the values of one column (or no column, for a count).
    /// The order matters only when a limit or `distinct` picks the rows.
    private func values(of column: String?) -> Results<SQLiteValue> {
        var values = Results<SQLiteValue>(host: results.host, table: results.table) { decoder in
            column.flatMap { decoder.value(named: $0) ?? decoder.value(named: ColumnNaming.snakeCase($0)) } ?? .null
        }
        values.filter = results.filter
        values.limitCount = results.limitCount
        values.distinctColumns = results.distinctColumns
        if results.limitCount != nil || !results.distinctColumns.isEmpty { values.orderings = results.orderings }
        return values
    }

    private func make<Value>(_ function: AggregateFunction, _ column: String?, _ convert: @escaping @Sendable (SQLiteValue) -> Value) -> LiveAggregate<Value> {
        LiveAggregate(results: values(of: column), function: function, column: column, convert: convert)
    }

    /// The number of rows (`count(*)`).
    public var count: LiveAggregate<Int> { make(.count, nil) { Int(sqliteValue: $0) ?? 0 } }

    /// The sum of a column's non-NULL values; NULL when there are none (SQL's `sum`).
    ///
    /// - Parameter column: the column's name.
    /// - Returns: the aggregate, to fetch or observe.
    /// - Complexity: O(1) to build. Observed: a count, sum or average moves in
    ///   O(k) for k changed rows; a min or max in O(k log d) for d distinct values.
    public func sum(of column: String) -> LiveAggregate<SQLiteValue> { make(.sum, column) { $0 } }
    /// The smallest non-NULL value of a column; NULL when there is none.
    ///
    /// - Parameter column: the column's name.
    /// - Returns: the aggregate, to fetch or observe.
    /// - Complexity: O(1) to build. Observed: a count, sum or average moves in
    ///   O(k) for k changed rows; a min or max in O(k log d) for d distinct values.
    public func min(of column: String) -> LiveAggregate<SQLiteValue> { make(.min, column) { $0 } }
    /// The largest non-NULL value of a column; NULL when there is none.
    ///
    /// - Parameter column: the column's name.
    /// - Returns: the aggregate, to fetch or observe.
    /// - Complexity: O(1) to build. Observed: a count, sum or average moves in
    ///   O(k) for k changed rows; a min or max in O(k log d) for d distinct values.
    public func max(of column: String) -> LiveAggregate<SQLiteValue> { make(.max, column) { $0 } }
    /// The average of a column's non-NULL values; nil when there are none.
    ///
    /// - Parameter column: the column's name.
    /// - Returns: the aggregate, to fetch or observe.
    /// - Complexity: O(1) to build. Observed: a count, sum or average moves in
    ///   O(k) for k changed rows; a min or max in O(k log d) for d distinct values.
    public func average(of column: String) -> LiveAggregate<Double?> { make(.average, column) { Double(sqliteValue: $0) } }
}

extension ResultsAggregates where Element: Model {
    private func column(_ keyPath: PartialKeyPath<Element>) -> String {
        // An unknown key path becomes a column name no table has: the aggregate reports it.
        (try? Element.column(for: keyPath).get()) ?? "\(keyPath)"
    }

    /// The sum of a property's values (0 when there are none, as Realm's `sum(ofProperty:)`).
    ///
    /// - Parameter keyPath: a stored property of the model.
    /// - Returns: the aggregate, to fetch or observe.
    /// - Complexity: O(1) to build. Observed: a count, sum or average moves in
    ///   O(k) for k changed rows; a min or max in O(k log d) for d distinct values.
    public func sum<V: SQLiteValueConvertible & AdditiveArithmetic>(of keyPath: KeyPath<Element, V>) -> LiveAggregate<V> {
        make(.sum, column(keyPath)) { V(sqliteValue: $0) ?? .zero }
    }
    /// The sum of an optional property's non-nil values (0 when there are none).
    ///
    /// - Parameter keyPath: a stored property of the model.
    /// - Returns: the aggregate, to fetch or observe.
    /// - Complexity: O(1) to build. Observed: a count, sum or average moves in
    ///   O(k) for k changed rows; a min or max in O(k log d) for d distinct values.
    public func sum<V: SQLiteValueConvertible & AdditiveArithmetic>(of keyPath: KeyPath<Element, V?>) -> LiveAggregate<V> {
        make(.sum, column(keyPath)) { V(sqliteValue: $0) ?? .zero }
    }
    /// The smallest value of a property; nil when there are no rows (or only nils).
    ///
    /// - Parameter keyPath: a stored property of the model.
    /// - Returns: the aggregate, to fetch or observe.
    /// - Complexity: O(1) to build. Observed: a count, sum or average moves in
    ///   O(k) for k changed rows; a min or max in O(k log d) for d distinct values.
    public func min<V: SQLiteValueConvertible>(of keyPath: KeyPath<Element, V>) -> LiveAggregate<V?> {
        make(.min, column(keyPath)) { V(sqliteValue: $0) }
    }
    /// The smallest non-nil value of an optional property.
    ///
    /// - Parameter keyPath: a stored property of the model.
    /// - Returns: the aggregate, to fetch or observe.
    /// - Complexity: O(1) to build. Observed: a count, sum or average moves in
    ///   O(k) for k changed rows; a min or max in O(k log d) for d distinct values.
    public func min<V: SQLiteValueConvertible>(of keyPath: KeyPath<Element, V?>) -> LiveAggregate<V?> {
        make(.min, column(keyPath)) { V(sqliteValue: $0) }
    }
    /// The largest value of a property; nil when there are no rows (or only nils).
    ///
    /// - Parameter keyPath: a stored property of the model.
    /// - Returns: the aggregate, to fetch or observe.
    /// - Complexity: O(1) to build. Observed: a count, sum or average moves in
    ///   O(k) for k changed rows; a min or max in O(k log d) for d distinct values.
    public func max<V: SQLiteValueConvertible>(of keyPath: KeyPath<Element, V>) -> LiveAggregate<V?> {
        make(.max, column(keyPath)) { V(sqliteValue: $0) }
    }
    /// The largest non-nil value of an optional property.
    ///
    /// - Parameter keyPath: a stored property of the model.
    /// - Returns: the aggregate, to fetch or observe.
    /// - Complexity: O(1) to build. Observed: a count, sum or average moves in
    ///   O(k) for k changed rows; a min or max in O(k log d) for d distinct values.
    public func max<V: SQLiteValueConvertible>(of keyPath: KeyPath<Element, V?>) -> LiveAggregate<V?> {
        make(.max, column(keyPath)) { V(sqliteValue: $0) }
    }
    /// The average of a property's values; nil when there are none.
    ///
    /// - Parameter keyPath: a stored property of the model.
    /// - Returns: the aggregate, to fetch or observe.
    /// - Complexity: O(1) to build. Observed: a count, sum or average moves in
    ///   O(k) for k changed rows; a min or max in O(k log d) for d distinct values.
    public func average<V: SQLiteValueConvertible>(of keyPath: KeyPath<Element, V>) -> LiveAggregate<Double?> {
        make(.average, column(keyPath)) { Double(sqliteValue: $0) }
    }
    /// The average of an optional property's non-nil values; nil when there are none.
    ///
    /// - Parameter keyPath: a stored property of the model.
    /// - Returns: the aggregate, to fetch or observe.
    /// - Complexity: O(1) to build. Observed: a count, sum or average moves in
    ///   O(k) for k changed rows; a min or max in O(k log d) for d distinct values.
    public func average<V: SQLiteValueConvertible>(of keyPath: KeyPath<Element, V?>) -> LiveAggregate<Double?> {
        make(.average, column(keyPath)) { Double(sqliteValue: $0) }
    }
}

extension Results {
    /// Live aggregates of these results: `count`, `sum(of:)`, `min(of:)`,
    /// `max(of:)`, `average(of:)`, each a `LiveAggregate` to fetch, observe,
    /// iterate or wrap in a `LiveValue`.
    public var aggregates: ResultsAggregates<Element> { ResultsAggregates(results: self) }
}
