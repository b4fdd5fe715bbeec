import Foundation

/// The rows of one table a device syncs: those a filter keeps (all, without one). The rows
/// they point at through their foreign keys come too, and the rows those point at, so that
/// every reference resolves on the device.
///
/// The filter is a query in the store's filter language (`recipient.city == $0`), with its
/// arguments: the service runs it with the same SQLite and the same compiler as the
/// device, so both keep the same rows. Paths follow a foreign key to one row
/// (`recipient.city`); paths of two steps or to lists (`contents.weight`), `SUBQUERY` and
/// `MATCH` are refused.
public struct SyncSubscription: Sendable, Hashable, Codable {
    /// The table, as the registered schema names it.
    public var table: String
    /// The filter (nil: every row of the table).
    public var filter: String?
    /// The values of `$0`, `$1`, ... in the filter.
    public var arguments: [SyncValue]?
    /// When the device fetches the bytes of its rows' attachments (nil: as
    /// `SyncConfiguration.attachmentFetch` says). The device's own business: not sent.
    public var attachments: AttachmentFetch?

    private enum CodingKeys: String, CodingKey { case table, filter, arguments }

    /// A subscription.
    ///
    /// - Parameters:
    ///   - table: the table.
    ///   - filter: the filter, in the store's filter language (nil: every row).
    ///   - arguments: the values of its `$0`, `$1`, ...
    public init(table: String, filter: String? = nil, arguments: [SyncValue]? = nil) {
        self.table = table
        self.filter = filter
        self.arguments = arguments
    }

    /// This subscription, its rows' attachments fetched as `fetch` says.
    ///
    /// - Parameter fetch: eagerly (in every sync) or lazily (when the app asks).
    /// - Returns: the subscription.
    public func fetchingAttachments(_ fetch: AttachmentFetch) -> SyncSubscription {
        var copy = self
        copy.attachments = fetch
        return copy
    }
}

/// `POST /v1/rows`: a device that syncs a subset asks for the rows of its subscriptions
/// that changed after `since`, as their current values, in pages (a round).
public struct RowsRequest: Sendable, Hashable, Codable {
    /// The head the device's rows are at (0: it has none, or its subscriptions changed).
    public var since: Int64
    /// What the device syncs.
    public var subscriptions: [SyncSubscription]
    /// Where the previous page of this round ended (nil: the first page).
    public var after: RowsPosition?
    /// At most this many rows (and the rows they point at).
    public var limit: Int?
    /// The asking device (its position counts for compaction).
    public var device: String?
    /// The head of the round's first page (nil on the first page). With `since` 0, the rows
    /// a page's rows point at in a table subscribed whole earlier in the round are sent again
    /// only when written after it: the device has the others from that part of the round.
    /// (Services before this field send them all.)
    public var roundHead: Int64?

    /// A request.
    ///
    /// - Parameters:
    ///   - since: the head the device's rows are at.
    ///   - subscriptions: what the device syncs.
    ///   - after: where the previous page ended.
    ///   - limit: at most this many rows.
    ///   - device: the asking device.
    ///   - roundHead: the head of the round's first page.
    public init(since: Int64, subscriptions: [SyncSubscription], after: RowsPosition? = nil, limit: Int? = nil, device: String? = nil,
                roundHead: Int64? = nil) {
        self.since = since
        self.subscriptions = subscriptions
        self.after = after
        self.limit = limit
        self.device = device
        self.roundHead = roundHead
    }
}

/// A place in a round of ``RowsRequest`` pages: the part (a subscription, then the tables
/// its rows point at) and the last row id of that part's table.
public struct RowsPosition: Sendable, Hashable, Codable {
    /// The part the page ended in.
    public var subscription: Int
    /// The last row id the page held in that part.
    public var id: String

    /// A position.
    ///
    /// - Parameters:
    ///   - subscription: the part.
    ///   - id: the last row id.
    public init(subscription: Int, id: String) {
        self.subscription = subscription
        self.id = id
    }
}

/// The answer to a ``RowsRequest``: rows as changes the device applies.
///
/// - `insert`: the row's current values (every column), with when each was written
///   (`clocks`): the device creates the row, or updates the columns that differ, settling
///   its unpushed values by its conflict policies;
/// - `delete`: the row was deleted;
/// - `leave`: the row is no longer in the device's subset: removed there, not deleted.
public struct RowsResponse: Sendable, Hashable, Codable {
    /// The history's head when the page was read: the page holds the rows as they were then.
    public var head: Int64
    /// The rows.
    public var changes: [SyncChange]
    /// Where the next page starts (nil: the round is complete).
    public var next: RowsPosition?

    /// A page.
    ///
    /// - Parameters:
    ///   - head: the history's head when the page was read.
    ///   - changes: the rows.
    ///   - next: where the next page starts.
    public init(head: Int64, changes: [SyncChange], next: RowsPosition?) {
        self.head = head
        self.changes = changes
        self.next = next
    }
}
