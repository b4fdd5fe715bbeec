import Foundation
import Logging
import PostgresNIO
import SluiceSyncPolicy
import SluiceSyncProtocol

/// A push's view of a space in PostgreSQL, inside the push's transaction: what
/// ``PushDecision`` reads to decide it, and the append (CHECK constraints,
/// columns an older version does not know, the fold into `sluice_row`, the parents' ON
/// DELETE actions, the head).
struct PostgresPushStorage: PushStorage {
    let connection: PostgresConnection
    let space: Int64
    let logger: Logger
    let policy: SyncStorage.PushPolicy

    // What concerns this device alone comes before the space's lock, which every push of
    // the space waits for: the device's row, locked by the upsert, orders two pushes under
    // one id; a replay copies a transaction committed long before. (The space's lock is NO
    // KEY UPDATE: the upsert's foreign key holds KEY SHARE on the space's row, which FOR
    // UPDATE would wait for, two pushes each other.)
    //
    // The device's last number comes from its row (`last_local`, kept by each push's fold):
    // the upsert returns the row as the push it waited for left it, where a read of
    // `sluice_txn` in the same statement would see the history as it was when the statement
    // began. The head and the clocks are read as they were then, which only the checks
    // under the lock rely on being current.
    func claim(device: String, token: String, clocks: [Int64]) async throws -> PushFacts? {
        var facts: PushFacts?
        for try await (owned, last, head, shared) in try await connection.query("""
            WITH claimed AS (
                INSERT INTO sluice_device (space_id, device, token_hash)
                VALUES (\(space), \(device), encode(sha256(convert_to(\(token), 'UTF8')), 'hex'))
                ON CONFLICT (space_id, device) DO UPDATE SET device = excluded.device
                RETURNING token_hash = encode(sha256(convert_to(\(token), 'UTF8')), 'hex') AS owned, last_local)
            SELECT claimed.owned,
                   coalesce(claimed.last_local, (SELECT max(local) FROM sluice_txn WHERE space_id = \(space) AND device = \(device))),
                   (SELECT head FROM sluice_space WHERE id = \(space)),
                   EXISTS (SELECT 1 FROM sluice_txn WHERE space_id = \(space) AND clock = ANY(\(clocks)) AND device <> \(device))
            FROM claimed
            """, logger: logger).decode((Bool, Int64?, Int64?, Bool).self) {
            facts = owned ? PushFacts(lastLocal: last, head: head ?? 0, othersShareAClock: shared) : nil
        }
        return facts
    }

    func sentClocks(device: String, locals: [Int64]) async throws -> [Int64: Int64] {
        var stored: [Int64: Int64] = [:]
        for try await (local, clock) in try await connection.query("""
            SELECT local, coalesce(sent, clock) FROM sluice_txn
            WHERE space_id = \(space) AND device = \(device) AND local = ANY(\(locals))
            """, logger: logger).decode((Int64, Int64).self) { stored[local] = clock }
        return stored
    }

    func transactions(withClocks clocks: [Int64], notBy device: String) async throws -> [StoredTransaction] {
        guard !clocks.isEmpty else { return [] }
        let rows = try await connection.query("""
            SELECT device, clock, local, changes FROM sluice_txn
            WHERE space_id = \(space) AND clock = ANY(\(clocks)) AND device <> \(device)
            """, logger: logger)
        var found: [StoredTransaction] = []
        for try await (other, clock, local, json) in rows.decode((String, Int64, Int64, String).self) {
            found.append(StoredTransaction(device: other, local: local, clock: clock, changes: try SyncJSON.decode([SyncChange].self, from: Data(json.utf8))))
        }
        return found
    }

    func footprints(after base: Int64, limit: Int64, notBy device: String) async throws -> [ChangeFootprint] {
        // PostgreSQL reads each change's row and the columns an update writes (a row per
        // change; a transaction with none gives one row of NULLs): decoding the changes'
        // values here was most of a crowded push's time under the space's lock.
        let rows = try await connection.query("""
            SELECT x.seq, c."table", c.id, c.op,
                   CASE WHEN json_typeof(c."values") = 'object' THEN ARRAY(SELECT json_object_keys(c."values")) END
            FROM (SELECT seq, changes FROM sluice_txn WHERE space_id = \(space) AND seq > \(base) AND device <> \(device) ORDER BY seq LIMIT \(limit)) x
            LEFT JOIN LATERAL json_to_recordset(x.changes::json) AS c ("table" TEXT, id TEXT, op TEXT, "values" JSON) ON true
            ORDER BY x.seq
            """, logger: logger)
        var found: [ChangeFootprint] = []
        for try await (seq, table, id, op, keys) in rows.decode((Int64, String?, String?, String?, [String]?).self) {
            found.append(ChangeFootprint(seq: seq, table: table, id: id, op: op, columns: keys))
        }
        return found
    }

    func headAndPruned(forAppend: Bool) async throws -> (head: Int64, pruned: Int64) {
        var result: (head: Int64, pruned: Int64) = (0, 0)
        for try await (head, pruned) in try await connection.query(
            "SELECT head, pruned FROM sluice_space WHERE id = \(space)\(unescaped: forAppend ? " FOR NO KEY UPDATE" : "")", logger: logger)
            .decode((Int64, Int64).self) { result = (head, pruned) }
        return result
    }

    func append(_ fresh: [SyncTransaction], device: String, after head: Int64) async throws -> Result<PushResponse, SyncErrorBody> {
        let rows = PostgresCurrentRows(connection: connection, space: space, logger: logger)
        if let checker = policy.checker {
            // Rows every device would refuse (a CHECK constraint) are refused here.
            do { try checker.check(try await PushRows.candidates(fresh, checks: checker.checks, rows: rows)) } catch let error as SyncErrorBody { return .failure(error) }
        }
        var seq = head
        let clamped = fresh.filter { $0.sent != nil }.count
        let now = Date()
        // With no ON DELETE action to look for, the last transaction's statement also
        // moves the head (one round trip fewer under the lock).
        let starts = DeleteActions.starts(fresh, rules: policy.deleteRules)
        for (index, transaction) in fresh.enumerated() {
            seq += 1
            // The clock to store (``PushDecision`` clamped one too far ahead), and the device's.
            let clock = transaction.clock
            let sent = transaction.sent?.rawValue
            let kept = try await PushRows.keepingUnknownColumns(transaction.changes, keep: policy.keptColumns, rows: rows)
            let changes = String(decoding: try SyncJSON.encode(kept), as: UTF8.self)
            try await SyncStorage.fold(kept, seq: seq, clock: clock.rawValue, space: space, connection: connection, logger: logger,
                                recording: SyncStorage.Recorded(device: device, local: transaction.local, clock: clock.rawValue, sent: sent, changes: changes),
                                movingHead: starts.isEmpty && index == fresh.count - 1)
        }
        // The device's cursor: its own transactions are all up to here (the service's own
        // that may follow, the device pulls).
        let cursor = seq
        // What the parents' ON DELETE actions leave, as a transaction of the service's own.
        let effects = starts.isEmpty ? [] : try await DeleteActions.take(from: starts, rules: policy.deleteRules, seq: seq + 1,
                                                                         clock: HybridClock(date: now).rawValue, rows: rows)
        if !effects.isEmpty {
            seq += 1
            let changes = String(decoding: try SyncJSON.encode(effects), as: UTF8.self)
            try await connection.query("""
                INSERT INTO sluice_txn (space_id, seq, device, local, clock, changes)
                VALUES (\(space), \(seq), \(DeleteActions.serviceDevice), \(seq), \(HybridClock(date: now).rawValue), \(changes))
                """, logger: logger)
        }
        if clamped > 0 {
            logger.warning("device \(device): \(clamped) transaction clock(s) ahead of the service's clock were stored with the service's clock")
        }
        if !starts.isEmpty {
            try await connection.query("WITH \(unescaped: SyncStorage.movingHead(space: space, to: seq))", logger: logger)
        }
        return .success(PushResponse(head: cursor, appended: fresh.count, clamped: clamped == 0 ? nil : clamped, followedBy: seq > cursor ? seq : nil,
                                     keepsUploadOrder: true))
    }
}
