/// A place in a live query's order that splits its rows in two: those
/// before it and those at or after it. A window keeps rows on each side.
enum WindowCut: Equatable {
    /// Before the first row.
    case start
    /// After the last row.
    case end
    /// At a sort key: `inclusive`, the row with that key is on the after side.
    case key(SortKey, inclusive: Bool)

    /// Whether a row with `key` is before the cut.
    func isBefore(_ key: SortKey, _ order: SortOrder) -> Bool {
        switch self {
        case .start: return false
        case .end: return true
        case .key(let cut, let inclusive):
            let result = order.compare(key, cut)
            return inclusive ? result < 0 : result <= 0
        }
    }

    /// Where one side's rows start: the sort key (nil: that end of the whole
    /// result) and whether the key's own row is on that side; nil when the
    /// side holds no row (before `.start`, after `.end`).
    func bound(_ side: WindowSQL.Side) -> (key: SortKey?, orEqual: Bool)? {
        switch (self, side) {
        case (.start, .before), (.end, .after): return nil
        case (.start, .after), (.end, .before): return (nil, false)
        case (.key(let key, let inclusive), .after): return (key, inclusive)
        case (.key(let key, let inclusive), .before): return (key, !inclusive)
        }
    }
}

/// What a windowed live query keeps beside its tree, which holds the
/// window's rows only: the cut, how many rows it wants on each side, and
/// the counts for `WindowPosition`.
struct WindowState {
    var sql: WindowSQL
    /// What built `sql`, to build it again for a new plan.
    let filter: Filter?
    let orderBy: [Ordering]
    var cut: WindowCut
    /// Rows wanted before the cut.
    var before: Int
    /// Rows wanted at and after the cut.
    var after: Int
    /// For an offset window: the position the cut keeps.
    var pinnedOffset: Int?
    /// How many of the tree's rows are before the cut.
    var heldBefore = 0
    /// The number of rows in the whole result, once counted.
    var total: Int?
    /// The number of rows before the cut, once counted.
    var cutPosition: Int?

    var position: WindowPosition {
        WindowPosition(offset: cutPosition.map { Swift.max(0, $0 - heldBefore) }, totalCount: total)
    }

    /// Whether counting is still to do.
    var needsCount: Bool { total == nil || cutPosition == nil }
}

/// A change of a window asked for by its observer (`WindowHandle`).
enum WindowRequest: Sendable {
    case grow(WindowEdge, Int)
    case shrink(WindowEdge, Int)
    case move(ResultsWindow)
}
