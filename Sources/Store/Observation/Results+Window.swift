import Dispatch

extension Results {
    /// Follows a window of the sorted results instead of all of them: the
    /// first or last rows, the rows around one, or the rows from a position
    /// (see `ResultsWindow`). Observed, the window is kept up to date from
    /// each commit's changed rows, never by running the query again: a
    /// commit costs O(k log w) for k changed rows and a window of w, plus a
    /// keyset read at an edge when rows leave it; the observer holds the
    /// window's rows only, whatever the size of the result. Changesets are
    /// in the window's indices, and each snapshot's `window` says where the
    /// rows are in the whole result and how many it has (counted once,
    /// right after the first rows are delivered, then kept from the
    /// changes). `token.window` grows, shrinks or moves it.
    ///
    /// ```swift
    /// let token = messages.sorted(byKeyPath: "sent_at").window(.last(50)).observe { change in ... }
    /// token.window?.loadMore(at: .start, count: 50)
    /// ```
    ///
    /// The order must be one Sluice compares as SQLite does (columns with
    /// BINARY, NOCASE or RTRIM collations); ties are broken by the primary
    /// key, then the rowid. An index on the filter's equality columns and
    /// the sort columns lets SQLite read a window's edges without scanning.
    /// `fetch()` (and iterating) reads the window's rows once.
    ///
    /// - Parameter window: which rows to follow.
    /// - Returns: the windowed results (a new value). Combined with
    ///   `limit` or `distinct`, fetching and observing report `.invalidQuery`.
    public func window(_ window: ResultsWindow) -> Results {
        var copy = self
        copy.windowSpec = window
        return copy
    }

    /// What a live query of these results needs to follow their window.
    func windowSource(filter: Filter?) throws -> (window: ResultsWindow, filter: Filter?, orderBy: [Ordering])? {
        guard let windowSpec else { return nil }
        guard limitCount == nil, distinctColumns.isEmpty else {
            throw StoreError(code: .invalidQuery, message: "a window of \(table) cannot be combined with limit or distinct: the window is the limit")
        }
        return (windowSpec, filter, orderings)
    }

    /// The window's rows as they are now, with the offset, limit and order
    /// `select` asks for applied to them.
    func windowElements(_ db: Database, filter: Filter?, _ select: SelectBuilder) throws -> [Element] {
        let live = try LiveQuery(plan: try plan(in: db, keyPaths: nil), decode: decode, db: db, pin: nil, window: try windowSource(filter: filter))
        var elements = Array(live.snapshot)
        if select.reversed { elements.reverse() }
        elements = Array(elements.dropFirst(select.offset ?? 0))
        if let limit = select.limit { elements = Array(elements.prefix(limit)) }
        return elements
    }
}

/// Grows, shrinks or moves the window an observation follows
/// (`ObservationToken.window`). Each request is applied on the store's
/// observation queue at the state the observer last received, in order
/// with the commits, and delivered as an `.update` whose changeset inserts
/// or deletes rows at that edge.
public final class WindowHandle: Sendable {
    private let host: any ObservationHost
    private weak let observation: (any WindowResizable)?

    init(_ observation: any WindowResizable, host: any ObservationHost) {
        self.observation = observation
        self.host = host
    }

    /// Adds up to `count` rows at an edge (`.start` when the list is
    /// scrolled to its top). An offset window moves its start back.
    public func loadMore(at edge: WindowEdge, count: Int) {
        send(.grow(edge, count))
    }

    /// Lets go of `count` rows at an edge (the rows scrolled far out of view).
    public func shrink(at edge: WindowEdge, count: Int) {
        send(.shrink(edge, count))
    }

    /// Follows another window of the same results (a scroll bar dragged to
    /// a position: `.offset(k, count: 50)`); the changeset goes from the
    /// rows held to the new window's.
    public func move(to window: ResultsWindow) {
        send(.move(window))
    }

    private func send(_ request: WindowRequest) {
        weak let observation = self.observation
        host.perform { observation?.resize(request) }
    }
}

/// An observation whose window `WindowHandle` changes (on the observation queue).
protocol WindowResizable: AnyObject, Sendable {
    func resize(_ request: WindowRequest)
    /// Counts the window's result once its first rows are delivered.
    func countWindow()
}
