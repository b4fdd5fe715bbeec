/// Which rows of a sorted live query an observer follows: a window of the
/// result, kept up to date from each commit's changed rows, with memory in
/// the window's size (not the result's) and changesets in the window's
/// indices (a row entering at an edge is an insertion, one pushed out a
/// deletion, one reordered inside a move).
///
/// A window is a cut in the order and a number of rows on each side of it:
///
/// | window | the cut | rows kept |
/// |---|---|---|
/// | `.first(n)` | before the first row | the first `n` |
/// | `.last(n)` | after the last row | the last `n` (the newest messages of a chat sorted by time) |
/// | `.around(key:before:after:)` | at the anchor row's sort values | `before` rows before it, the rows at and after it |
/// | `.after(key:count:)`, `.before(key:count:)` | just after / at the anchor row | `count` rows after / before it |
/// | `.offset(k, count:)` | at position `k` | `count` rows from there (a scroll bar dragged to 40%) |
///
/// The cut is a place in the order, not a row: it stays where it is when
/// its row changes or goes, and rows inserted on either side come in at
/// that side (a message appended to a chat enters `.last(50)` at its end
/// and pushes the oldest out). An offset window keeps its cut at position
/// `k`: rows entering or leaving before it shift it by as many rows.
///
/// ```swift
/// let token = store.objects(Message.self)
///     .filter("conversation_id == $0", id)
///     .sorted(byKeyPath: "sent_at")
///     .window(.last(50))
///     .observe { change in ... }          // snapshot.window: offset and total count
/// token.window?.loadMore(at: .start, count: 50)   // scrolled to the top: 50 older messages
/// ```
public struct ResultsWindow: Sendable, Hashable {
    /// Where the cut starts.
    enum Cut: Sendable, Hashable {
        case first
        case last
        case offset(Int)
        /// At the row with this primary key; `inclusive`: the row is on the after side.
        case anchor(SQLiteValue, inclusive: Bool)
    }

    let cut: Cut
    /// Rows wanted before the cut.
    let before: Int
    /// Rows wanted at and after the cut.
    let after: Int

    /// The first `count` rows (top-N).
    public static func first(_ count: Int) -> ResultsWindow {
        ResultsWindow(cut: .first, before: 0, after: Swift.max(0, count))
    }

    /// The last `count` rows (bottom-N: the newest messages of a
    /// conversation sorted by time).
    public static func last(_ count: Int) -> ResultsWindow {
        ResultsWindow(cut: .last, before: Swift.max(0, count), after: 0)
    }

    /// `count` rows from position `offset` (0 is the first row); empty while
    /// the result has no more than `offset` rows.
    public static func offset(_ offset: Int, count: Int) -> ResultsWindow {
        ResultsWindow(cut: .offset(Swift.max(0, offset)), before: 0, after: Swift.max(0, count))
    }

    /// The anchor row (found by its primary key), `before` rows before it
    /// and `after` rows after it ("jump to unread").
    public static func around(key: some SQLiteValueConvertible, before: Int, after: Int) -> ResultsWindow {
        ResultsWindow(cut: .anchor(key.sqliteValue, inclusive: true), before: Swift.max(0, before), after: Swift.max(0, after) + 1)
    }

    /// The `count` rows after the anchor row, without it (scrolling on from a row).
    public static func after(key: some SQLiteValueConvertible, count: Int) -> ResultsWindow {
        ResultsWindow(cut: .anchor(key.sqliteValue, inclusive: false), before: 0, after: Swift.max(0, count))
    }

    /// The `count` rows before the anchor row, without it (scrolling back from a message).
    public static func before(key: some SQLiteValueConvertible, count: Int) -> ResultsWindow {
        ResultsWindow(cut: .anchor(key.sqliteValue, inclusive: true), before: Swift.max(0, count), after: 0)
    }

    /// The number of rows the window asks for.
    public var count: Int { before + after }
}

/// An end of a window, in the order of its results.
public enum WindowEdge: Sendable, Hashable {
    /// Where the rows that come first are (the oldest messages, sorted by time ascending).
    case start
    /// Where the rows that come last are.
    case end
}

/// Where a window's rows are in the whole result, for a scroll bar.
///
/// Both figures come from counting the result once (`count(*)`, which
/// walks an index: about 0.2 s at 10,000,000 rows), which a window does
/// right after its first rows are delivered, and then keeps up to date from
/// each commit's changed rows. Until then they are nil.
public struct WindowPosition: Sendable, Hashable {
    /// The index of the window's first row in the whole result; nil until counted.
    public let offset: Int?
    /// The number of rows in the whole result; nil until counted.
    public let totalCount: Int?

    public init(offset: Int?, totalCount: Int?) {
        self.offset = offset
        self.totalCount = totalCount
    }
}
