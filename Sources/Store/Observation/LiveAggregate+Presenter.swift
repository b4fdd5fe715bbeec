import Dispatch
import Observation
import SluiceNaming

// MARK: - Maintenance

/// Keeps an aggregate of a live query's values (the query's elements are
/// the aggregated column's values) up to date from each changeset.
final class AggregatePresenter: ResultsPresenter {
    private let function: AggregateFunction
    private let column: String?
    private var count = 0
    /// Non-NULL values.
    private var valueCount = 0
    private var integerSum: Int64 = 0
    private var realSum = 0.0
    /// Non-NULL values that are not integers (the sum is then a real).
    private var realCount = 0
    private var overflowed = false
    /// For min and max: each distinct value with how many rows have it, in SQLite's order.
    private var distinct = OrderedTree<(value: SQLiteValue, rows: Int)>(order: SortOrder(terms: []))
    private var last: SQLiteValue?

    init(function: AggregateFunction, column: String?) {
        self.function = function
        self.column = column
    }

    var sectionValue: LiveQuery<SQLiteValue>.SectionValue? { nil }

    static func unknown(_ column: String, in table: TableInfo) -> StoreError {
        StoreError(code: .unknownColumn, message: "unknown column '\(column)' to aggregate in table \(table.name) (columns: \(table.columnNames.joined(separator: ", ")))")
    }

    /// Whether the values of the first state were added as it was read.
    private var visited = false

    func willRead(_ plan: QueryPlan) throws -> ((SQLiteValue) -> Void)? {
        try reset(plan)
        visited = true
        return { [unowned self] value in add(value) }
    }

    private func reset(_ plan: QueryPlan) throws {
        var collation = SortOrder.Collation.binary
        if let column {
            guard let resolved = plan.table.column(named: column) else { throw Self.unknown(column, in: plan.table) }
            collation = SortOrder.Collation(name: plan.table.collation(of: resolved.name)) ?? .binary
        }
        (count, valueCount, integerSum, realSum, realCount, overflowed) = (0, 0, 0, 0, 0, false)
        distinct = OrderedTree(order: SortOrder(terms: [.init(descending: false, collation: collation)]))
    }

    func initial(_ live: LiveQuery<SQLiteValue>) throws -> Result<SQLiteValue, StoreError> {
        if visited {
            visited = false
        } else {
            try reset(live.plan)
            try live.forEachElement { value in add(value) }
        }
        let value = current
        last = value
        return .success(value)
    }

    var readsPreviousElements: Bool { true }

    func update(_ live: LiveQuery<SQLiteValue>, before tree: OrderedTree<Void>, elements before: ResultsSnapshot<SQLiteValue>?,
                _ changeset: Changeset) -> Result<SQLiteValue, StoreError>? {
        let after = live.snapshot
        do {
            guard let before else { throw StoreError(code: .internal, message: "an aggregate was updated without the previous values") }
            let removed = try before.rows.elements((changeset.deletions + changeset.modifications).map { tree.entry(at: $0).key.rowID })
            let added = try after.rows.elements((changeset.insertions + changeset.modificationsNew).map { after.tree.entry(at: $0).key.rowID })
            for value in removed { remove(value) }
            for value in added { add(value) }
        } catch {
            return self.error(error as? StoreError ?? StoreError(code: .error, message: "\(error)"))
        }
        let value = current
        guard value != last else { return nil }
        last = value
        return .success(value)
    }

    func error(_ error: StoreError) -> Result<SQLiteValue, StoreError> {
        last = nil
        return .failure(error)
    }

    /// The number a value counts as in a sum: an integer, or a real (text as SQLite converts it).
    private static func number(_ value: SQLiteValue) -> (integer: Int64?, real: Double) {
        switch value {
        case .integer(let int): return (int, Double(int))
        case .real(let double): return (nil, double)
        case .text(let text):
            if let int = Int64(text.trimmingCharacters(in: .whitespaces)) { return (int, Double(int)) }
            return (nil, Double(text.trimmingCharacters(in: .whitespaces)) ?? 0)
        case .blob, .null: return (nil, 0)
        }
    }

    private func add(_ value: SQLiteValue) {
        count += 1
        guard function != .count, value != .null else { return }
        valueCount += 1
        switch function {
        case .sum, .average:
            let number = Self.number(value)
            if let int = number.integer {
                let (sum, overflow) = integerSum.addingReportingOverflow(int)
                if overflow { overflowed = true; realSum += Double(int) } else { integerSum = sum }
            } else {
                realCount += 1
                realSum += number.real
            }
        case .min, .max:
            let key = SortKey(first: SortValue(value), rest: [], rowID: 0)
            let position = distinct.rank(of: key)
            if position < distinct.count, distinct.order.compare(distinct.entry(at: position).key, key) == 0 {
                let held = distinct.entry(at: position).element
                distinct.replace((held.value, held.rows + 1), key: key)
            } else {
                distinct.insert((value, 1), key: key)
            }
        case .count:
            break
        }
    }

    private func remove(_ value: SQLiteValue) {
        count -= 1
        guard function != .count, value != .null else { return }
        valueCount -= 1
        switch function {
        case .sum, .average:
            let number = Self.number(value)
            if let int = number.integer {
                let (sum, overflow) = integerSum.subtractingReportingOverflow(int)
                if overflow { overflowed = true; realSum -= Double(int) } else { integerSum = sum }
            } else {
                realCount -= 1
                realSum -= number.real
            }
        case .min, .max:
            let key = SortKey(first: SortValue(value), rest: [], rowID: 0)
            let position = distinct.rank(of: key)
            guard position < distinct.count, distinct.order.compare(distinct.entry(at: position).key, key) == 0 else { return }
            let held = distinct.entry(at: position).element
            if held.rows > 1 { distinct.replace((held.value, held.rows - 1), key: key) } else { distinct.remove(key: key) }
        case .count:
            break
        }
        if valueCount == 0 { (integerSum, realSum, realCount, overflowed) = (0, 0, 0, false) }
    }

    /// The aggregate's value now, as SQLite would give it.
    private var current: SQLiteValue {
        switch function {
        case .count:
            return .integer(Int64(count))
        case .sum:
            guard valueCount > 0 else { return .null }
            return realCount == 0 && !overflowed ? .integer(integerSum) : .real(Double(integerSum) + realSum)
        case .average:
            guard valueCount > 0 else { return .null }
            return .real((Double(integerSum) + realSum) / Double(valueCount))
        case .min:
            return distinct.count == 0 ? .null : distinct.entry(at: 0).element.value
        case .max:
            return distinct.count == 0 ? .null : distinct.entry(at: distinct.count - 1).element.value
        }
    }
}
