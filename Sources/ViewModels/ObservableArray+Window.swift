import Sluice

/// An `ObservableArray` over a window of its results (`Results.window`): a
/// chat's newest messages, a feed's first page. `items` holds the window's
/// rows only; `loadMore` grows it at an edge (the list scrolled to its top),
/// and `window` says where the rows are in the whole result, for a scroll bar.
///
/// ```swift
/// let messages = ObservableArray(conversation.sorted(by: \.sentAt, \.id).window(.last(50))) { MessageItem($0) }
/// messages.loadMore(at: .start, count: 50)   // 50 older messages come in at index 0 (a changeset on `changes`)
/// messages.window?.totalCount                 // every message of the conversation, once counted
/// ```
extension ObservableArray {
    /// Adds up to `count` rows at an edge of the window; they arrive as a
    /// change (insertions at that edge) on the main queue. Nothing for
    /// results that are not a window.
    public func loadMore(at edge: WindowEdge, count: Int) {
        token?.window?.loadMore(at: edge, count: count)
    }

    /// Lets go of `count` rows at an edge of the window (rows scrolled far away).
    public func shrink(at edge: WindowEdge, count: Int) {
        token?.window?.shrink(at: edge, count: count)
    }

    /// Follows another window of the same results (a jump to a position:
    /// `.offset(k, count: 50)`); the change goes from the items held to the new window's.
    public func move(to window: ResultsWindow) {
        token?.window?.move(to: window)
    }

    /// Whether the window has rows before its first item (nil until counted).
    public var hasMoreAtStart: Bool? { window?.offset.map { $0 > 0 } }

    /// Whether the window has rows after its last item (nil until counted).
    public var hasMoreAtEnd: Bool? {
        guard let offset = window?.offset, let total = window?.totalCount else { return nil }
        return offset + items.count < total
    }
}
