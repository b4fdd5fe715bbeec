/// Results read like Realm's: `count`, `isEmpty`, `first`, `last`, a
/// subscript, iteration and `map`, each answered by SQL at the moment you
/// ask (`count(*)`, `LIMIT 1`, `LIMIT 1 OFFSET i`), never by fetching every
/// row to answer one question. Iterating (and `map`, `Array(results)`)
/// reads all rows once, in one read transaction, when it starts.
///
/// ```swift
/// let adults = store.objects(Person.self).filter(\.age >= 18)
/// adults.count                    // SELECT count(*) ... WHERE age >= 18
/// adults.first?.firstName         // ... LIMIT 1
/// for person in adults { ... }    // one query, then in memory
/// let frozen = adults.freeze()    // one query: a random-access snapshot that never changes
/// ```
///
/// Each member reads the database as it is when called, so two calls can see
/// two different commits (Realm's live `Results` stay still until the run
/// loop turns). That is why `Results` is a `Sequence` and not a
/// `Collection`: a collection whose count can change between `count` and
/// iteration breaks the standard library's algorithms. Use `freeze()` for
/// a collection of one state, or observe (`ObservableArray`, `LiveResults`)
/// for one that follows the commits.
///
/// A query that cannot run (a filter string that does not parse, a dropped
/// table) is empty here: `count` is 0, `first` nil, iteration yields nothing.
/// `fetch()`, `fetchCount()` and `observe` report why.
extension Results: Sequence {
    /// Iterates over the rows of one read, made when iteration starts
    /// (`map`, `filter` with a closure, `reduce` and `Array(results)` go through it).
    ///
    /// - Complexity: one SQL query and O(n) decodes, when iteration starts.
    public func makeIterator() -> IndexingIterator<[Element]> {
        ((try? fetch()) ?? []).makeIterator()
    }

    /// The number of rows: `SELECT count(*)`, with the filter (0 when the query cannot run).
    public var count: Int { (try? fetchCount()) ?? 0 }

    /// Whether there are no rows: one `LIMIT 1` read.
    public var isEmpty: Bool { first == nil }

    /// The first row in the order: one `LIMIT 1` read.
    public var first: Element? {
        (try? fetch { select in select.limit = Swift.min(1, limitCount ?? 1) })?.first
    }

    /// The last row in the order: the first of the reversed order (one
    /// `LIMIT 1` read); for a limited query, the row at `count - 1`.
    public var last: Element? {
        guard limitCount == nil else {
            let count = self.count
            return count == 0 ? nil : element(at: count - 1)
        }
        return (try? fetch { select in
            select.reversed = true
            select.limit = 1
        })?.first
    }

    /// The row at a position in the order: one `LIMIT 1 OFFSET position`
    /// read. Positions are counted in the database as it is now, so a
    /// position below an earlier `count` may be past the end once another
    /// connection deleted rows: that, like a query that cannot run, throws
    /// instead of stopping the program.
    ///
    /// - Throws: `StoreError.Code.misuse` naming the position when there is
    ///   no row there; why the query cannot run.
    ///
    /// - Parameter position: the row's position in the order, from 0.
    /// - Complexity: one query that skips `position` rows: O(position), fewer with an index on the order.
    public subscript(position: Int) -> Element {
        get throws {
            guard position >= 0, position < limitCount ?? Int.max else { throw Self.outOfRange(position) }
            guard let element = try fetch(at: position) else { throw Self.outOfRange(position) }
            return element
        }
    }

    private static func outOfRange(_ position: Int) -> StoreError {
        StoreError(code: .misuse, message: "no row at position \(position) of the results (positions are counted in the database as it is now)")
    }

    /// The row at a position (`LIMIT 1 OFFSET position`), or nil past the end.
    private func fetch(at position: Int) throws -> Element? {
        try fetch { select in
            select.offset = position
            select.limit = 1
        }.first
    }

    /// The row at a position, or nil when there is none (or the query cannot run).
    ///
    /// - Parameter position: the row's position in the order, from 0.
    /// - Returns: the row, or nil.
    /// - Complexity: as the subscript.
    public func element(at position: Int) -> Element? {
        guard position >= 0, position < limitCount ?? Int.max else { return nil }
        return (try? fetch(at: position)) ?? nil
    }

    /// The rows as they are now, read in one query, as a frozen random-access
    /// collection (Realm's `freeze()`): it never changes, whatever is committed later.
    ///
    /// - Throws: why the query cannot run.
    ///
    /// - Returns: the snapshot.
    /// - Complexity: one SQL query; O(n) rows read, elements decoded on access.
    public func freeze() throws -> ResultsSnapshot<Element> {
        ResultsSnapshot(elements: try fetch())
    }
}
