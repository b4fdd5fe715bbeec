import Foundation
import SluiceSyncProtocol
import Sluice

extension SyncClient {
    /// The conflict inbox, oldest first, as a live list: observe it as any `Results`, and
    /// each record sync makes, restores and dismisses arrives as a changeset.
    ///
    /// ```swift
    /// let token = client.conflicts.observe { change in
    ///     if case .update(let conflicts, _, _, _) = change { badge = conflicts.count }
    /// }
    /// ```
    public nonisolated var conflicts: Results<SyncConflict> {
        store.objects(SyncConflict.self).sorted(by: \.id)
    }

    /// Takes back what a decision threw away, as a new local write that wins (its clock is
    /// later than both sides') and syncs like any other, and removes the record, in one
    /// transaction:
    /// - a column's lost value is written again;
    /// - an edit that lost to a delete brings the row back, as a new row with the values
    ///   it had, and with what the delete's ON DELETE actions did here: rows a CASCADE
    ///   removed come back as new rows pointing at it, references a SET NULL cleared point
    ///   at it again (while the log still holds the transaction that applied the delete);
    /// - a delete that lost to an edit deletes the row;
    /// - a quarantined transaction is applied again (it fails as before if the schema still
    ///   refuses it: the record stays).
    ///
    /// - Parameter conflict: a record of ``conflicts``.
    /// - Throws: `StoreError` `.notFound` when the inbox no longer holds it, `.conflict`
    ///   when the row it names is gone (or is back, for a row it would bring back); the
    ///   store is left as it was.
    public func restore(_ conflict: SyncConflict) throws {
        guard let id = conflict.id else { throw StoreError(code: .notFound, message: "conflict record has no id: it was never stored") }
        try Self.restoreConflict(id, in: store, configuration: engine.configuration)
    }

    /// Removes a record from the inbox: what it lost stays lost. Dismissing a quarantined
    /// transaction discards it (as ``discardQuarantined(in:configuration:)`` does, for it alone).
    ///
    /// - Parameter conflict: a record of ``conflicts``.
    /// - Throws: `StoreError` `.notFound` when the inbox no longer holds it.
    public func dismiss(_ conflict: SyncConflict) throws {
        guard let id = conflict.id else { throw StoreError(code: .notFound, message: "conflict record has no id: it was never stored") }
        try Self.dismissConflict(id, in: store)
    }

    /// The inbox of `store`, oldest first (empty for a store a client never synced).
    ///
    /// - Parameter store: the store.
    /// - Returns: every record.
    /// - Throws: `StoreError` when the inbox cannot be read.
    public static func conflicts(in store: Store) throws -> [SyncConflict] {
        try store.read { db in try ConflictInbox(db).all() }
    }

    /// ``restore(_:)`` for the record `id` of `store`, without a client (the CLI's
    /// `sluice sync conflicts --restore ID`).
    ///
    /// - Parameters:
    ///   - id: the record's id.
    ///   - store: the store.
    ///   - configuration: the sync configuration the store is synced with.
    /// - Throws: as ``restore(_:)``.
    public static func restoreConflict(_ id: Int64, in store: Store, configuration: SyncConfiguration) throws {
        let engine = SyncEngine(configuration: configuration)
        let merged = try store.write { db in
            try engine.loadTables(db)
            return try engine.restore(try inboxRecord(id, db), db)
        }
        if merged { try store.write { db in try engine.writeMerges(db) } }
    }

    /// ``dismiss(_:)`` for the record `id` of `store`, without a client.
    ///
    /// - Parameters:
    ///   - id: the record's id.
    ///   - store: the store.
    /// - Throws: as ``dismiss(_:)``.
    public static func dismissConflict(_ id: Int64, in store: Store) throws {
        try store.write { db in
            let record = try inboxRecord(id, db)
            if record.kind == .quarantined, let seq = record.seq { try QuarantineTable(db).remove(seq) }
            try ConflictInbox(db).remove(id)
        }
    }

    private static func inboxRecord(_ id: Int64, _ db: Database) throws -> SyncConflict {
        guard let record = try ConflictInbox(db).conflict(id) else {
            throw StoreError(code: .notFound, message: "no conflict record \(id) in the inbox (restored or dismissed already, or past its retention)")
        }
        return record
    }
}
