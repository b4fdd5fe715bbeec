import Foundation
import Logging
import PostgresNIO
import SluiceSyncPolicy
import SluiceSyncProtocol

/// Compaction: a space's history is pruned up to what every active device has pulled, and a
/// device that starts (or comes back from beyond the horizon) takes a snapshot of the folded
/// rows (``RowsRequest`` with every table) and the history after it. The rules are
/// ``HistoryPruning``'s, applied here in SQL:
///
/// - Each pull and rows request records the device's position (`sluice_device.pulled`, the
///   `since` it asked from) and when it was seen.
/// - ``compact(space:horizon:)`` deletes the transactions at or below the lowest position of
///   the devices seen within the horizon (`sluice_space.pruned` records how far), keeping each
///   device's last transaction (a retried push and a copied store are still recognized by it).
/// - A pull from below the pruned point is answered 410 `compacted`; a push based below it,
///   409 `behind` (what came after its base is no longer there to check against).
extension SyncStorage {
    /// Records where a device's rows are (the `since` of its pull): the history below the
    /// lowest position of the active devices may go.
    ///
    /// Its commit does not wait for the WAL to reach the disk (`synchronous_commit` off for
    /// this statement's transaction alone): a position lost to a crash of PostgreSQL is an
    /// older one kept, which prunes less, never more. Every pull makes one, and each waited
    /// for an fsync of its own.
    func saw(device: String, at since: Int64, space: Int64, token: String) async throws {
        try await client.query("""
            INSERT INTO sluice_device (space_id, device, token_hash, pulled, seen_at)
            SELECT \(space), \(device), encode(sha256(convert_to(\(token), 'UTF8')), 'hex'), \(since), now()
            FROM (SELECT set_config('synchronous_commit', 'off', true)) AS unsynchronized
            ON CONFLICT (space_id, device) DO UPDATE SET pulled = greatest(sluice_device.pulled, excluded.pulled), seen_at = now()
            """, logger: logger)
    }

    /// What a compaction did.
    public struct Compaction: Sendable, Equatable {
        /// The sequence the history is pruned up to now.
        public var prunedThrough: Int64
        /// How many transactions it deleted.
        public var deleted: Int
        /// How many attachments it deleted (no row or kept transaction names them, and no
        /// upload or push touched them within the horizon).
        public var attachmentsDeleted = 0
    }

    /// Prunes a space's history up to the lowest position of the devices seen within
    /// `horizon` (the head, when none was); a device gone longer starts again from a snapshot.
    ///
    /// - Parameters:
    ///   - space: the space's name.
    ///   - horizon: how long a device may stay away and still find the history it needs.
    /// - Returns: how far the history is pruned, and how many transactions went.
    public func compact(space: String, horizon: Duration) async throws -> Compaction {
        let seconds = HistoryPruning.seconds(horizon)
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            var through: Int64 = 0
            var id: Int64 = 0
            // The space's row is locked: a push waits (pruning and appending never interleave).
            for try await (spaceID, pruned) in try await connection.query("""
                UPDATE sluice_space s SET pruned = greatest(s.pruned, least(s.head, coalesce(
                    (SELECT min(d.pulled) FROM sluice_device d
                     WHERE d.space_id = s.id AND d.seen_at > now() - make_interval(secs => \(seconds))), s.head)))
                WHERE s.name = \(space) RETURNING s.id, s.pruned
                """, logger: logger).decode((Int64, Int64).self) { (id, through) = (spaceID, pruned) }
            guard id != 0 else { throw SyncErrorBody(.invalid, message: "no space named '\(space)'") }
            var deleted = 0
            for try await count in try await connection.query("""
                WITH gone AS (
                    DELETE FROM sluice_txn t WHERE t.space_id = \(id) AND t.seq <= \(through)
                      AND t.local < (SELECT max(x.local) FROM sluice_txn x WHERE x.space_id = t.space_id AND x.device = t.device)
                    RETURNING 1)
                SELECT count(*) FROM gone
                """, logger: logger).decode(Int64.self) { deleted = Int(count) }
            var attachments = 0
            for try await count in try await connection.query("""
                WITH named AS (
                    SELECT jsonb_path_query(vals::jsonb, '$.*.att.sha256') #>> '{}' AS hash FROM sluice_row WHERE space_id = \(id) AND NOT deleted
                    UNION SELECT jsonb_path_query(changes::jsonb, '$[*].values.*.att.sha256') #>> '{}' FROM sluice_txn WHERE space_id = \(id)),
                gone AS (
                    DELETE FROM sluice_attachment a WHERE a.space_id = \(id) AND a.touched_at < now() - make_interval(secs => \(seconds))
                      AND NOT EXISTS (SELECT 1 FROM named n WHERE n.hash = a.hash)
                    RETURNING 1)
                SELECT count(*) FROM gone
                """, logger: logger).decode(Int64.self) { attachments = Int(count) }
            logger.info("compacted space \(space): history pruned through \(through), \(deleted) transaction(s) and \(attachments) attachment(s) deleted")
            return Compaction(prunedThrough: through, deleted: deleted, attachmentsDeleted: attachments)
        }
    }
}
