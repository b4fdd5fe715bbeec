import Foundation
import Sluice

/// `sluice_live_sync_conflict`: the conflict inbox (``SyncConflict``), written in the
/// transaction that makes each decision, so that a decision and its record commit together.
/// The only code that writes the table.
struct ConflictInbox {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// Whether the table is there (a store a client of this version never opened for writing
    /// has none: read as empty).
    func exists() throws -> Bool { try db.tableExists(SyncConflict.tableName) }

    /// Records `conflict`, then drops what `retention` no longer keeps; returns its id.
    @discardableResult
    func record(_ conflict: SyncConflict, retention: ConflictRetention) throws -> Int64? {
        let id = try db.insert(conflict).id
        try prune(retention)
        return id
    }

    /// Notes the local transaction that applied record `id`'s decision.
    func setApplied(_ id: Int64, sequence: Int64) throws {
        try db.execute(sql: "UPDATE sluice_live_sync_conflict SET applied = ? WHERE id = ?", arguments: [.integer(sequence), .integer(id)])
    }

    /// The record `id`, if the inbox holds it.
    func conflict(_ id: Int64) throws -> SyncConflict? {
        guard try exists() else { return nil }
        return try db.fetchOne(SyncConflict.self, id: id)
    }

    /// Every record, oldest first.
    func all() throws -> [SyncConflict] {
        guard try exists() else { return [] }
        return try db.fetchAll(SyncConflict.self, sql: "SELECT * FROM sluice_live_sync_conflict ORDER BY id")
    }

    func remove(_ id: Int64) throws {
        try db.execute(sql: "DELETE FROM sluice_live_sync_conflict WHERE id = ?", arguments: [.integer(id)])
    }

    /// The records of a quarantined transaction (restored or dismissed with it).
    func removeQuarantined(seq: Int64) throws {
        guard try exists() else { return }
        try db.execute(sql: "DELETE FROM sluice_live_sync_conflict WHERE kind = ? AND seq = ?",
                       arguments: [SyncConflict.Kind.quarantined.sqliteValue, .integer(seq)])
    }

    func removeAllQuarantined() throws {
        guard try exists() else { return }
        try db.execute(sql: "DELETE FROM sluice_live_sync_conflict WHERE kind = ?", arguments: [SyncConflict.Kind.quarantined.sqliteValue])
    }

    /// Drops records older than the retention's age, and the oldest past its count.
    func prune(_ retention: ConflictRetention, now: Date = Date()) throws {
        if let age = retention.maxAge {
            try db.execute(sql: "DELETE FROM sluice_live_sync_conflict WHERE at < ?", arguments: [now.addingTimeInterval(-age).sqliteValue])
        }
        if let count = retention.maxCount {
            try db.execute(sql: """
                DELETE FROM sluice_live_sync_conflict WHERE id <= (SELECT id FROM sluice_live_sync_conflict ORDER BY id DESC LIMIT 1 OFFSET ?)
                """, arguments: [.integer(Int64(max(count, 0)))])
        }
    }
}

/// How long the conflict inbox keeps a record it was not told to restore or dismiss.
public struct ConflictRetention: Sendable, Equatable {
    /// Records older than this many seconds are dropped (nil: any age).
    public var maxAge: TimeInterval?
    /// At most this many records, the newest (nil: any number).
    public var maxCount: Int?

    public init(maxAge: TimeInterval?, maxCount: Int?) {
        self.maxAge = maxAge
        self.maxCount = maxCount
    }

    /// Thirty days, and at most 10,000 records.
    public static let standard = ConflictRetention(maxAge: 30 * 24 * 3600, maxCount: 10_000)
    /// Every record until it is restored or dismissed.
    public static let forever = ConflictRetention(maxAge: nil, maxCount: nil)
}
