import Foundation
import Logging
import PostgresNIO
import SluiceSyncPolicy
import SluiceSyncProtocol

extension SyncStorage {
    /// The end of a statement (after `WITH` or a CTE's comma) that moves a space's head and
    /// notifies ``headChannel``; the notification is delivered at commit, to every instance
    /// listening (``HeadListener``). Only numbers are spliced in.
    static func movingHead(space: Int64, to seq: Int64) -> String {
        """
        moved AS (UPDATE sluice_space SET head = \(seq) WHERE id = \(space) RETURNING id)
        SELECT pg_notify('\(headChannel)', '\(space):\(seq)') FROM moved
        """
    }

    /// A transaction as `sluice_txn` records it (its changes as JSON).
    struct Recorded {
        var device: String
        var local: Int64
        var clock: Int64
        var sent: Int64?
        var changes: String
    }

    /// Folds one transaction into `sluice_row`: net change per row first (a transaction may
    /// touch a row several times; one upsert may not), then one statement for all rows.
    /// With `recording`, the same statement appends the transaction to `sluice_txn` (one
    /// round trip under the space's lock, not two); when every change names a row of its
    /// own (the usual case, and the first upload of a device's rows) PostgreSQL reads the
    /// changes from the row it appends, so they are neither encoded nor sent a second time.
    /// Without, the changes are sent as JSON.
    ///
    /// Each row also keeps when each of its columns was last written (`clocks`: the
    /// transaction's clock per column), which a device syncing a subset settles its
    /// unpushed values against (``RowsResponse``).
    static func fold(_ changes: [SyncChange], seq: Int64, clock: Int64, space: Int64, connection: PostgresConnection,
                     logger: Logger, recording: Recorded? = nil, movingHead: Bool = false) async throws {
        let net = RowFold.writesARowTwice(changes) || recording == nil ? RowFold.net(changes) : nil
        try await fold(changes, net: net, seq: seq, clock: clock, space: space, connection: connection, logger: logger,
                       recording: recording, movingHead: movingHead)
    }

    /// Folds `net` (one change per row, ``RowFold/net(_:)``), sent as JSON, at `seq`.
    static func fold(net: [RowFold.Change], seq: Int64, clock: Int64, space: Int64, connection: PostgresConnection,
                     logger: Logger) async throws {
        try await fold([], net: net, seq: seq, clock: clock, space: space, connection: connection, logger: logger)
    }

    /// `net` nil: every change names a row of its own and `recording` is there, so the
    /// changes are read from the appended row.
    private static func fold(_ changes: [SyncChange], net: [RowFold.Change]?, seq: Int64, clock: Int64, space: Int64, connection: PostgresConnection,
                             logger: Logger, recording: Recorded? = nil, movingHead: Bool = false) async throws {
        // Each written column's clock (only a number is spliced in): made once for the
        // transaction when all its inserts, or all its updates, write the same columns (a part
        // of a first upload, an edit of many rows; `u`, sent as JSON), else per row, where its
        // subquery was a fifth of PostgreSQL's time folding an upload's part.
        let perRow = "(SELECT coalesce(jsonb_object_agg(k, \(clock)::bigint), '{}'::jsonb) FROM json_object_keys(c.v) AS k)"
        let written = net.map { $0.map { ($0.op, $0.values) } } ?? changes.map { ($0.op, $0.values ?? [:]) }
        let uniform = (insert: Self.uniformClocks(written, op: .insert, clock: clock), update: Self.uniformClocks(written, op: .update, clock: clock))
        let insertClocks = uniform.insert == nil ? perRow : "(SELECT u.inserts FROM u)"
        let updateClocks = uniform.update == nil ? perRow : "(SELECT u.updates FROM u)"
        // insert: the values replace the row (a delete before it in history is undone);
        // update: merged into a live row (an update of a deleted row changes nothing);
        // delete: marks the row deleted. One statement: the changes are read once, and
        // no two parts touch the same row (one net change per row).
        let apply = """
            , inserted AS (
                INSERT INTO sluice_row (space_id, tbl, id, vals, deleted, seq, clocks)
                SELECT c.space, c.t, c.id, c.v, false, c.seq, \(insertClocks) FROM c WHERE c.op = 'insert'
                ON CONFLICT (space_id, tbl, id) DO UPDATE SET vals = excluded.vals, deleted = false, seq = excluded.seq, clocks = excluded.clocks)
            , updated AS (
                UPDATE sluice_row r SET vals = (r.vals::jsonb || c.v::jsonb)::json, seq = c.seq, clocks = coalesce(r.clocks, '{}'::jsonb) || \(updateClocks) FROM c
                WHERE c.op = 'update' AND r.space_id = c.space AND r.tbl = c.t AND r.id = c.id AND NOT r.deleted)
            , removed AS (
                UPDATE sluice_row r SET deleted = true, seq = c.seq FROM c
                WHERE c.op = 'delete' AND r.space_id = c.space AND r.tbl = c.t AND r.id = c.id)
            \(movingHead ? ", " + Self.movingHead(space: space, to: seq) : "SELECT 1")
            """
        // The transaction's row, appended by the same statement (nothing without `recording`),
        // and its number kept as the device's last (only numbers are spliced in; the device
        // is the one the appended row names).
        let record = recording ?? Recorded(device: "", local: 0, clock: 0, sent: nil, changes: "[]")
        let lastLocal = recording == nil ? "" : """
            , mine AS (UPDATE sluice_device AS d SET last_local = greatest(d.last_local, \(record.local))
                FROM x WHERE d.space_id = x.space_id AND d.device = x.device)
            """
        if let net {
            let json = String(decoding: try folded(net), as: UTF8.self)
            try await connection.query("""
                WITH x AS (
                    INSERT INTO sluice_txn (space_id, seq, device, local, clock, sent, changes)
                    SELECT \(space), \(seq), \(record.device), \(record.local), \(record.clock), \(record.sent), \(record.changes)
                    WHERE \(recording != nil)
                    RETURNING space_id, device)
                \(unescaped: lastLocal)
                , u AS (SELECT \(uniform.insert)::jsonb AS inserts, \(uniform.update)::jsonb AS updates)
                , c AS MATERIALIZED (
                    SELECT \(space)::bigint AS space, \(seq)::bigint AS seq, c.t, c.id, c.op, c.v
                    FROM json_to_recordset(\(json)::json) AS c (t TEXT, id TEXT, op TEXT, v JSON))
                \(unescaped: apply)
                """, logger: logger)
        } else {
            // The rows' table names as stored (lowercased by Swift, as every other statement
            // here has them), matched by the name each change carries.
            let names = Array(Set(changes.map(\.table)))
            let lowered = names.map { $0.lowercased() }
            try await connection.query("""
                WITH x AS (
                    INSERT INTO sluice_txn (space_id, seq, device, local, clock, sent, changes)
                    VALUES (\(space), \(seq), \(record.device), \(record.local), \(record.clock), \(record.sent), \(record.changes))
                    RETURNING space_id, device, changes)
                \(unescaped: lastLocal)
                , u AS (SELECT \(uniform.insert)::jsonb AS inserts, \(uniform.update)::jsonb AS updates)
                , c AS MATERIALIZED (
                    SELECT \(space)::bigint AS space, \(seq)::bigint AS seq, m.lowered AS t, c.id, c.op, coalesce(c."values", '{}'::json) AS v
                    FROM x
                    CROSS JOIN json_to_recordset(x.changes::json) AS c ("table" TEXT, id TEXT, op TEXT, "values" JSON)
                    JOIN unnest(\(names)::text[], \(lowered)::text[]) AS m (name, lowered) ON m.name = c."table")
                \(unescaped: apply)
                """, logger: logger)
        }
    }

    /// The clocks object (`{"column": clock, ...}`) of every change `op` of a transaction
    /// when they all write the same columns; nil when they differ or there is none.
    static func uniformClocks(_ changes: [(SyncChange.Operation, [String: SyncValue])], op: SyncChange.Operation, clock: Int64) -> String? {
        var columns: Dictionary<String, SyncValue>.Keys?
        for (operation, values) in changes where operation == op {
            if let columns {
                guard values.count == columns.count, values.keys.allSatisfy({ columns.contains($0) }) else { return nil }
            } else {
                columns = values.keys
            }
        }
        guard let columns else { return nil }
        var writer = SyncJSON.Writer(capacity: 16 + columns.count * 32)
        if columns.isEmpty { writer.raw("{") }
        for (index, name) in columns.sorted().enumerated() {
            writer.member(index == 0 ? "{" : ",", name)
            writer.member(":", clock)
        }
        writer.raw("}")
        return String(decoding: writer.data, as: UTF8.self)
    }

    /// `net` as the JSON array the fold reads (`[{"t":…,"id":…,"op":…,"v":{…}}]`).
    private static func folded(_ net: [RowFold.Change]) throws -> Data {
        var writer = SyncJSON.Writer(capacity: 16 + net.count * 256)
        writer.raw("[")
        for (index, entry) in net.enumerated() {
            if index > 0 { writer.comma() }
            writer.member("{\"t\":", entry.table)
            writer.member(",\"id\":", entry.id)
            writer.member(",\"op\":", entry.op.rawValue)
            writer.raw(",\"v\":")
            try writer.values(entry.values, at: "table \(entry.table), row \(entry.id)")
            writer.raw("}")
        }
        writer.raw("]")
        return writer.data
    }
}
