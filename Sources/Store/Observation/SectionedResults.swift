import Dispatch
import Foundation

/// Results grouped into sections by a key, as Realm's `SectionedResults`
/// and Core Data's `sectionNameKeyPath`: each section holds the rows with
/// one key, in the results' order, and sections come in the order of
/// their keys (as SQLite orders the key values; descending when asked).
///
/// ```swift
/// let byInitial = store.objects(Person.self)
///     .sorted(by: \.lastName)
///     .sectioned { String($0.lastName.prefix(1)) }
/// let token = byInitial.observe { change in
///     switch change {
///     case .initial(let sections):
///         tableView.reloadData()
///     case .update(let sections, let deletions, let insertions, let modifications, let sectionsToInsert, let sectionsToDelete):
///         tableView.performBatchUpdates { ... }
///     case .error(let error):
///         print(error)
///     }
/// }
/// ```
///
/// Sectioning by a column (or a stored property's key path) sorts by it
/// first, in SQL; rows whose values the column's collation calls equal
/// (NOCASE: `"a"` and `"A"`) share a section. Sectioning by a closure sorts
/// by its value (compared as SQLite compares the value it converts to)
/// before the results' own order; the closure must give the same key for the
/// same row values, and a row counts as modified when any of its columns
/// changes.
///
/// A commit that changes k rows costs O(k log n) beyond the live query's own
/// work, whatever the number of sections.
public struct SectionedResults<Key: Hashable & Sendable, Element: Sendable>: Sendable {
    let results: Results<Element>
    /// The column sectioned by, when the key is a column's value.
    let column: String?
    /// The closure sectioned by, when the key is computed.
    let compute: (@Sendable (Element) -> SQLiteValue)?
    let descending: Bool
    /// The key of a section, from its value and its first element.
    let makeKey: @Sendable (SQLiteValue, Element) -> Key

    /// The sections as they are now: one read.
    ///
    /// - Throws: why the query cannot run.
    ///
    /// - Returns: the sections.
    /// - Complexity: one SQL query; O(n) for n rows (decoding each when the key is a closure).
    public func fetch() throws -> SectionedResultsSnapshot<Key, Element> {
        try results.host.read { db in
            let presenter = makePresenter()
            let live = try LiveQuery(plan: try results.plan(in: db, keyPaths: nil), decode: results.decode,
                                     sectionValue: presenter.sectionValue, db: db, pin: nil)
            guard case .initial(let snapshot) = try presenter.initial(live) else {
                throw StoreError(code: .internal, message: "sectioning did not produce a first state")
            }
            return snapshot
        }
    }

    func makePresenter() -> SectionPresenter<Key, Element> {
        SectionPresenter(sectionValue: compute.map { compute in
            LiveQuery<Element>.SectionValue(value: { SortValue(compute($0)) }, descending: descending)
        }, column: column, makeKey: makeKey)
    }

    /// Observes the sections on the main actor: `block` receives `.initial`,
    /// then one `.update` per commit that changes them, in commit order, on
    /// the main queue, as the main actor (it can update a table view directly).
    ///
    /// - Parameters:
    ///   - keyPaths: column names; when given, a row counts as modified only
    ///     when one of these columns changes (see `observe(keyPaths:on:scheduling:_:)`).
    ///   - scheduling: `.immediate` delivers `.initial` before this returns
    ///     when called on the main actor (elsewhere, asynchronously).
    ///   - block: receives the changes, as the main actor.
    /// - Returns: a token: keep it to keep observing.
    public func observe(
        keyPaths: [String]? = nil, scheduling: ObservationScheduling = .async,
        _ block: @escaping @MainActor (SectionedResultsChange<Key, Element>) -> Void
    ) -> ObservationToken {
        observe(keyPaths: keyPaths, on: .main, scheduling: MainActorDelivery.scheduling(scheduling), MainActorDelivery.deliver(block))
    }

    /// Observes the sections: `block` receives `.initial`, then one
    /// `.update` per commit that changes them, in commit order, on `queue`.
    ///
    /// - Parameters:
    ///   - keyPaths: column names; when given, a row counts as modified only
    ///     when one of these columns changes (rows entering, leaving or
    ///     changing section are always reported). Ignored when sectioning by
    ///     a closure, which may read any column.
    ///   - queue: where `block` runs, one call at a time, in commit order.
    ///   - scheduling: `.immediate` delivers `.initial` before this returns,
    ///     on the calling thread (call it from `queue`).
    ///   - block: receives the changes.
    /// - Returns: a token: keep it to keep observing.
    /// - Complexity: as `Results.observe(keyPaths:on:scheduling:_:)`, plus
    ///   O(s) per commit for s sections (and one decode per changed row
    ///   when sectioning by a closure).
    public func observe(
        keyPaths: [String]? = nil, on queue: DispatchQueue, scheduling: ObservationScheduling = .async,
        _ block: @escaping @Sendable (SectionedResultsChange<Key, Element>) -> Void
    ) -> ObservationToken {
        var observed = keyPaths
        if compute != nil { observed = nil }
        if let column, let keys = observed, !keys.contains(column) { observed = keys + [column] }
        let observation = ResultsObservation(results: results, keyPaths: observed, presenter: makePresenter(),
                                             delivery: Delivery(queue: queue, block: block))
        return results.host.start(observation, scheduling: scheduling) { block($0) }
    }

    /// The changes as an `AsyncSequence` (buffered without limit: none is
    /// lost). Iteration stops when the task is cancelled.
    public var changes: AsyncStream<SectionedResultsChange<Key, Element>> {
        let sectioned = self
        return AsyncStream { continuation in
            let token = sectioned.observe(on: DispatchQueue(label: "sluice.stream")) { continuation.yield($0) }
            continuation.onTermination = { _ in token.invalidate() }
        }
    }
}

extension Results {
    /// Sections these results by a column's value (a Swift property name
    /// works too): sorts by it first (`ascending` or not), then by the
    /// results' own order. The section keys are the column's values.
    ///
    /// - Parameters:
    ///   - column: the column whose values are the sections' keys.
    ///   - ascending: the order of the sections.
    /// - Returns: the sectioned results.
    /// - Complexity: O(1) to build. Observed: O(k log n) per commit for k changed rows, plus O(s) for s sections.
    public func sectioned(by column: String, ascending: Bool = true) -> SectionedResults<SQLiteValue, Element> {
        var sorted = self
        sorted.orderings = [Ordering(column, descending: !ascending)] + orderings
        return SectionedResults(results: sorted, column: column, compute: nil, descending: !ascending) { value, _ in value }
    }

    /// Sections these results by a key computed from each element (an
    /// initial, a month): sections come in the order of their keys, as
    /// SQLite orders the values the keys convert to; within a section, rows
    /// keep the results' order.
    ///
    /// The key must depend only on the row's values. Every row is decoded to
    /// compute its key.
    ///
    /// - Parameters:
    ///   - ascending: the order of the sections.
    ///   - key: computes a row's section key; it must depend only on the row.
    /// - Returns: the sectioned results.
    /// - Complexity: O(1) to build. Observed: O(k log n) per commit for k changed rows, plus O(s) for s sections.
    public func sectioned<Key: SQLiteValueConvertible & Hashable>(
        ascending: Bool = true, by key: @escaping @Sendable (Element) -> Key
    ) -> SectionedResults<Key, Element> {
        SectionedResults(results: self, column: nil, compute: { key($0).sqliteValue }, descending: !ascending) { _, first in key(first) }
    }
}

extension Results where Element: Model {
    /// Sections these results by a stored property (sorted by its column
    /// first); the section keys are the property's values.
    ///
    /// - Parameters:
    ///   - keyPath: the stored property whose values are the sections' keys.
    ///   - ascending: the order of the sections.
    /// - Returns: the sectioned results.
    /// - Complexity: O(1) to build. Observed: O(k log n) per commit for k changed rows, plus O(s) for s sections.
    public func sectioned<Key: Hashable & Sendable>(
        by keyPath: KeyPath<Element, Key> & Sendable, ascending: Bool = true
    ) -> SectionedResults<Key, Element> {
        switch Element.column(for: keyPath) {
        case .success(let column):
            var sorted = self
            sorted.orderings = [Ordering(column, descending: !ascending)] + orderings
            return SectionedResults(results: sorted, column: column, compute: nil, descending: !ascending) { _, first in first[keyPath: keyPath] }
        case .failure(let error):
            return SectionedResults(results: failing(error), column: nil, compute: nil, descending: false) { _, first in first[keyPath: keyPath] }
        }
    }
}

// MARK: - Snapshots

/// The sections of a live query after one commit: a random-access
/// collection of `ResultsSection`s, frozen (it never changes after you
/// receive it). Finding a section is O(log n); its key is read from its
/// first row.
public struct SectionedResultsSnapshot<Key, Element>: RandomAccessCollection {
    /// Every row, in section order.
    public let elements: ResultsSnapshot<Element>
    let state: SectionState
    let makeKey: @Sendable (SQLiteValue, Element) -> Key
    /// The modified rows' index paths in the new sections (for `.update`).
    public let modificationsNew: [IndexPath]
    /// The state before the commit and its flat changeset, to merge changes.
    let previous: (tree: OrderedTree<Void>, sections: SectionState, changeset: Changeset)?

    /// 0.
    public var startIndex: Int { 0 }
    /// The number of sections.
    public var endIndex: Int { state.sections.count }

    /// The section at a position.
    ///
    /// - Complexity: O(log n).
    ///
    /// - Parameter position: the section's index, from 0.
    public subscript(position: Int) -> ResultsSection<Key, Element> {
        precondition(position >= 0 && position < count, "Section index out of bounds")
        let value = state.sections.entry(at: position).key.first
        let range = state.range(of: value, in: elements.tree)
        return ResultsSection(key: makeKey(state.sqliteValue(value), elements[range.lowerBound]),
                              elements: elements, range: range)
    }

    /// The row at an index path (`section`, `item`).
    ///
    /// - Parameter indexPath: the section's index, then the row's index in it.
    /// - Complexity: O(log n).
    public subscript(indexPath: IndexPath) -> Element {
        self[indexPath[0]][indexPath[1]]
    }

    /// The section keys, in order.
    public var allKeys: [Key] { map { $0.key } }
}

/// One section: its key and its rows, a random-access collection.
public struct ResultsSection<Key, Element>: RandomAccessCollection {
    /// The key every row of the section has.
    public let key: Key
    let elements: ResultsSnapshot<Element>
    let range: Range<Int>

    /// 0.
    public var startIndex: Int { 0 }
    /// The number of rows in the section.
    public var endIndex: Int { range.count }

    /// The row at a position in the section.
    ///
    /// - Complexity: O(log n).
    ///
    /// - Parameter position: the row's index in the section, from 0.
    public subscript(position: Int) -> Element {
        precondition(position >= 0 && position < range.count, "Index out of bounds")
        return elements[range.lowerBound + position]
    }
}

extension SectionedResultsSnapshot: @unchecked Sendable where Key: Sendable, Element: Sendable {}
extension ResultsSection: Sendable where Key: Sendable, Element: Sendable {}

// MARK: - Changes

/// What an observer of sectioned results receives, as Realm's
/// `SectionedResultsChange`: the first sections, then one change per
/// commit that changed them.
///
/// An `.update` carries Realm's values; `changeset` gives them as the one
/// sectioned changeset value, `SectionedChangeset`, which documents their
/// index spaces and adds the modified rows' new index paths. `apply(to:transform:)`
/// applies it to arrays mirroring the sections.
public enum SectionedResultsChange<Key, Element> {
    /// The sections when observation starts.
    case initial(SectionedResultsSnapshot<Key, Element>)
    /// The sections after a commit that changed them, and how they changed.
    case update(SectionedResultsSnapshot<Key, Element>, deletions: [IndexPath], insertions: [IndexPath], modifications: [IndexPath],
                sectionsToInsert: IndexSet, sectionsToDelete: IndexSet)
    /// The query can no longer run.
    case error(StoreError)

    /// The sections this change leads to, or nil for `.error`.
    public var sections: SectionedResultsSnapshot<Key, Element>? {
        switch self {
        case .initial(let sections), .update(let sections, _, _, _, _, _): return sections
        case .error: return nil
        }
    }

    /// The modified rows' index paths in the new sections (empty unless `.update`).
    public var modificationsNew: [IndexPath] {
        guard case .update(let sections, _, _, _, _, _) = self else { return [] }
        return sections.modificationsNew
    }

    /// The changeset of an `.update`, with `modificationsNew`; nil for `.initial` and `.error`.
    public var changeset: SectionedChangeset? {
        guard case .update(let sections, let deletions, let insertions, let modifications, let sectionsToInsert, let sectionsToDelete) = self else {
            return nil
        }
        return SectionedChangeset(deletions: deletions, insertions: insertions, modifications: modifications,
                                  modificationsNew: sections.modificationsNew, sectionsToInsert: sectionsToInsert, sectionsToDelete: sectionsToDelete)
    }
}

extension SectionedResultsChange: @unchecked Sendable where Key: Sendable, Element: Sendable {}

extension SectionedResultsChange {
    /// Applies the change to arrays that mirror the previous sections:
    /// afterwards they equal the new ones. Only inserted and modified rows
    /// (and the rows of inserted sections) are mapped.
    ///
    /// - Parameters:
    ///   - sections: the previous sections' keys and mapped rows.
    ///   - transform: maps a row; called for the rows inserted, modified or in new sections.
    /// - Complexity: as `SectionedChangeset.apply(to:newSection:newRow:)`, plus one transform per row mapped.
    public func apply<Mapped>(to sections: inout [(key: Key, items: [Mapped])], transform: (Element) throws -> Mapped) rethrows {
        switch self {
        case .initial(let snapshot):
            sections = try snapshot.map { section in (section.key, try section.map(transform)) }
        case .update(let snapshot, _, _, _, _, _):
            try changeset?.apply(to: &sections, newSection: { index in
                let section = snapshot[index]
                return (section.key, try section.map(transform))
            }, newRow: { path in try transform(snapshot[path]) })
        case .error:
            break
        }
    }
}
