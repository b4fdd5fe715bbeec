import Foundation
import SluiceSyncProtocol
import SluiceSyncStore
import Sluice

/// One decision sync made against a value on this device: a record of the conflict inbox.
///
/// Sync settles every conflict by its rules (``ConflictPolicy``, ``DeleteConflictRule``) and
/// goes on; the inbox keeps what each decision threw away, so that a person can see it and
/// take it back. Read it as a live list, ``SyncClient/conflicts``; restore a lost value with
/// ``SyncClient/restore(_:)`` (a new write that wins and syncs like any other) or dismiss a
/// record with ``SyncClient/dismiss(_:)``. Records are rows of `sluice_live_sync_conflict`
/// in the store's file: they survive a relaunch, are kept as
/// ``SyncConfiguration/conflictRetention`` says, and are never synced or logged.
public struct SyncConflict: Model, Equatable {
    public static let tableName = "sluice_live_sync_conflict"

    /// What was decided.
    public enum Kind: String, Codable, Sendable, SQLiteValueConvertible {
        /// A column's value lost to another (``SyncConflict/rule`` says which rule chose).
        case column
        /// A merge closure wrote its result over both sides; `lost` is this device's value.
        case merge
        /// An edit lost to a delete: the row is gone, and `row` holds its values as they
        /// were (restoring brings it back as a new row).
        case editLostToDelete = "edit-lost-to-delete"
        /// A delete lost to an edit: the row stayed (or came back) with the edit.
        case deleteLostToEdit = "delete-lost-to-edit"
        /// A pulled transaction this device could not apply (a value its schema refuses, a
        /// column an older app version does not have) was set aside: `detail` says why.
        case quarantined
    }

    /// The rule that decided.
    public enum Rule: String, Codable, Sendable, SQLiteValueConvertible {
        case lastWriterWins = "last-writer-wins"
        case serverWins = "server-wins"
        case deviceWins = "device-wins"
        case merge
        case deleteWins = "delete-wins"
        case updateWins = "update-wins"
        /// The device's schema refused the values.
        case schema
    }

    /// One side of a decision: a value, who wrote it and when.
    public struct Side: Sendable, Equatable, Codable {
        /// The value (NULL for a deleted row's side).
        public var value: SQLiteValue
        /// The device that wrote it (nil where the service does not say: a snapshot's rows).
        public var device: String?
        /// When it was written, by the writer's hybrid logical clock.
        public var clock: HybridClock?

        public init(value: SQLiteValue, device: String?, clock: HybridClock?) {
            self.value = value
            self.device = device
            self.clock = clock
        }

        private enum CodingKeys: String, CodingKey { case value, device, clock }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            value = try container.decode(SyncValue.self, forKey: .value).sqliteValue
            device = try container.decodeIfPresent(String.self, forKey: .device)
            clock = try container.decodeIfPresent(HybridClock.self, forKey: .clock)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(SyncValue(value), forKey: .value)
            try container.encodeIfPresent(device, forKey: .device)
            try container.encodeIfPresent(clock, forKey: .clock)
        }
    }

    /// The record's id (nil before it is stored).
    public var id: Int64?
    /// The table.
    public var table: String
    /// The row's local id (its rowid here).
    public var rowID: Int64
    /// The row's global id, as every device names it.
    public var globalID: String
    /// The column (nil for a decision about the whole row, or a quarantined transaction).
    public var column: String?
    public var kind: Kind
    public var rule: Rule
    /// What the store holds now.
    public var kept: Side
    /// What was thrown away.
    public var lost: Side
    /// A row's values as this device had them (an edit lost to a delete), by column.
    public var row: [String: SQLiteValue]?
    /// The pulled transaction's place in the space's history, when one decided.
    public var seq: Int64?
    /// The local transaction that applied the decision (its sequence in this store's log):
    /// for an edit lost to a pulled delete, it holds the rows the delete's ON DELETE actions
    /// removed or cleared here, which restoring brings back.
    public var appliedSequence: Int64?
    /// Why, in words (a quarantined transaction's error).
    public var detail: String?
    /// When the decision was made here.
    public var date: Date

    public init(table: String, rowID: Int64, globalID: String, column: String?, kind: Kind, rule: Rule,
                kept: Side, lost: Side, row: [String: SQLiteValue]? = nil, seq: Int64? = nil, detail: String? = nil, date: Date = Date()) {
        self.table = table
        self.rowID = rowID
        self.globalID = globalID
        self.column = column
        self.kind = kind
        self.rule = rule
        self.kept = kept
        self.lost = lost
        self.row = row
        self.seq = seq
        self.detail = detail
        self.date = date
    }

    public mutating func didInsert(rowID: Int64) { id = rowID }

    public static func columnName(for keyPath: PartialKeyPath<SyncConflict>) -> String? {
        switch keyPath {
        case \SyncConflict.id: "id"
        case \SyncConflict.table: "tbl"
        case \SyncConflict.rowID: "row_id"
        case \SyncConflict.globalID: "gid"
        case \SyncConflict.column: "col"
        case \SyncConflict.kind: "kind"
        case \SyncConflict.rule: "rule"
        case \SyncConflict.seq: "seq"
        case \SyncConflict.date: "at"
        default: nil
        }
    }
}
