import Foundation
import SluiceSyncProtocol
import Sluice

/// How a device settles a column that it changed and another device changed too, before
/// it pushed its own change (the service's history is linear: every device rebases its
/// unpushed changes onto what it pulls, so the rule decides once and every device replays
/// the outcome).
public enum ConflictPolicy: Sendable {
    /// The later write by hybrid logical clock wins; on equal clocks, the value the service
    /// already holds (pushed first).
    case lastWriterWins
    /// What the service already has wins: the device's unpushed value is dropped.
    case serverWins
    /// The device's unpushed value wins: the pulled value is not applied, and the device's
    /// push overwrites it everywhere.
    case deviceWins
    /// The closure decides from the value at the last sync (`base`), the device's
    /// unpushed value and the pulled one; its result is written locally (in a transaction
    /// of its own, authored `"sync-merge"`) and pushed.
    case merge(@Sendable (MergeConflict) -> SQLiteValue)
}

/// What a merge closure gets.
public struct MergeConflict: Sendable {
    /// The table.
    public let table: String
    /// The column.
    public let column: String
    /// The value before the device's unpushed change (nil when the device inserted the row).
    public let base: SQLiteValue?
    /// The device's unpushed value.
    public let local: SQLiteValue
    /// The value pulled from the service (foreign keys as local ids).
    public let remote: SQLiteValue
}

/// What happens when one device deletes a row that another updated concurrently. (Not
/// the schema's ON DELETE actions, `SyncSchema.DeleteRule`, which the service applies to
/// a deleted parent's rows.)
public enum DeleteConflictRule: Sendable, Equatable {
    /// The delete wins: the update is dropped (Realm's rule, and the default).
    case deleteWins
    /// The update wins: the row comes back with its values and the update applied.
    case updateWins
}

/// The former name of ``DeleteConflictRule``.
@available(*, deprecated, renamed: "DeleteConflictRule")
public typealias DeleteRule = DeleteConflictRule

/// Which tables a device syncs and how it settles conflicts.
public struct SyncConfiguration: Sendable {
    /// The synced tables (each with an `INTEGER PRIMARY KEY` or a plain rowid); rows of
    /// other tables stay on the device.
    public var tables: [String]
    /// The policy for columns without one of their own or their table's.
    public var defaultPolicy: ConflictPolicy = .lastWriterWins
    /// Policies per table.
    public var tablePolicies: [String: ConflictPolicy] = [:]
    /// Policies per column, keyed `"table.column"`.
    public var columnPolicies: [String: ConflictPolicy] = [:]
    /// Delete against concurrent update.
    public var deleteRule: DeleteConflictRule = .deleteWins
    /// How long the conflict inbox (``SyncConflict``) keeps a record nobody restored or
    /// dismissed: thirty days and 10,000 records unless said otherwise.
    public var conflictRetention: ConflictRetention = .standard
    /// Most local transactions in one push: a longer queue (a device offline for a while)
    /// goes in several pushes, oldest first, each acknowledged before the next. When the
    /// service refuses a push as too large (413: over its body size or transaction count),
    /// the client sends half as many and goes on; one transaction over the limits cannot
    /// be split, and its error is thrown.
    public var pushBatchSize = 1_000
    /// Most rows in one part of a store's first upload (the rows it held before it first
    /// synced, sent in parts, each a transaction of its own, and resumed after the last
    /// part the service took if interrupted); halved, as ``pushBatchSize``, on a 413.
    public var uploadBatchRows = 10_000

    /// The space to sync, sent as the `Sluice-Space` header: needed when the bearer is a
    /// JWT that opens several spaces (a token opens one; nil then).
    public var space: String?

    /// Partial sync: the rows this device syncs, by table and filter (nil: every row of
    /// every synced table, and the history of every transaction). With subscriptions the
    /// device keeps the rows their filters keep, and the rows those point at (whose tables
    /// must be among `tables`); a row that enters or leaves arrives or goes as an ordinary
    /// changeset. Change them at run time with ``SyncClient/subscribe(_:)``.
    public var subscriptions: [SyncSubscription]?

    /// Whether a device that has never pulled starts from a snapshot of the space's rows (one
    /// local transaction: one changeset) and then pulls the history after it (the default),
    /// or replays the whole history the service keeps, transaction by transaction.
    ///
    /// A snapshot sends each row once, however often it was edited, and is as fast as
    /// replaying even where the history is exactly as long as the rows (see
    /// Benchmarks/README.md). While it comes, the store's writer is held (local writes wait
    /// for it, as for any write transaction); replaying commits page by page, and puts each
    /// pulled transaction in this device's log as a transaction of its own. A snapshot this
    /// device cannot apply (a value its tables refuse), or a service that serves none (one
    /// older than partial sync), makes it replay instead. Either way a device whose history
    /// is pruned (see "Sync in production") takes a snapshot, as does a device away longer
    /// than the service keeps history.
    public var startsFromSnapshot = true

    /// Blob columns whose values travel out of line, as `"table.column"` (nullable BLOB
    /// columns; register the service's schema with the same list): pushes and pulls carry
    /// their SHA-256 and size, and the bytes go to and from the service in chunks, once per
    /// content, resumed after a cut. A pulled attachment's column is NULL until its bytes
    /// are here (``PendingAttachment``).
    public var attachments: [String] = []

    /// When the bytes of pulled attachments are fetched: in every sync (the default), or when
    /// the app asks (``SyncClient/fetchAttachments(table:rowIDs:)``). A subscription may say
    /// otherwise for its rows (`SyncSubscription.fetchingAttachments(_:)`).
    public var attachmentFetch: AttachmentFetch = .eager

    /// The registered schema version this app's tables are (sent as `Sluice-Schema-Version`):
    /// with several versions registered, the device pushes and pulls in its own version's
    /// names, and never receives tables and columns a later version added (nil: the newest).
    public var schemaVersion: Int?

    /// A configuration for `tables`, last writer wins everywhere, deletes win.
    ///
    /// - Parameter tables: the tables to sync.
    public init(tables: [String]) { self.tables = tables }

    /// The policy of one column.
    ///
    /// - Parameters:
    ///   - table: the table's name.
    ///   - column: the column's name.
    /// - Returns: the policy that settles a conflict on it.
    public func policy(table: String, column: String) -> ConflictPolicy {
        let table = table.lowercased()
        if let policy = columnPolicies.first(where: { $0.key.lowercased() == "\(table).\(column.lowercased())" })?.value { return policy }
        if let policy = tablePolicies.first(where: { $0.key.lowercased() == table })?.value { return policy }
        return defaultPolicy
    }
}
