import Foundation
import Logging
import PostgresNIO
import SluiceSyncProtocol

/// Partial sync: the rows of a device's subscriptions, as changes to apply (``RowsResponse``).
///
/// A round (pages after `since`, each read in one snapshot of the database) holds:
/// - for each subscription, the rows of its table changed after `since` (and, for a filter
///   with a path such as `recipient.city`, the rows whose parent along the path changed):
///   deleted ones as `delete`, kept ones as `insert` with their values, the others as `leave`
///   (or as `insert` when a row the device keeps points at them: it keeps them while so);
/// - after `since` > 0, the changed rows of the tables the subscriptions' rows point at:
///   as `insert` those a kept row points at, as `leave` (the id only) the others;
/// - the rows every row sent as `insert` points at, and the rows those point at (so that
///   the device's foreign keys resolve).
///
/// The device then removes its rows that no subscription keeps and no row points at.
extension SyncStorage {
    /// The tables a device with `subscriptions` holds: theirs, and the tables their rows
    /// point at, and so on; the ones no subscription names come after, by name.
    static func subsetTables(_ subscriptions: [SubsetEvaluator.Checked], schema: SyncSchema) -> (referenceOnly: [SyncSchema.Table], targets: Set<String>) {
        var all: [String: SyncSchema.Table] = [:]
        var queue = subscriptions.map(\.table)
        while let table = queue.popLast() {
            guard all[table.name.lowercased()] == nil else { continue }
            all[table.name.lowercased()] = table
            queue += table.columns.compactMap(\.references).compactMap { schema.table(named: $0) }
        }
        let subscribed = Set(subscriptions.map { $0.table.name.lowercased() })
        let targets = Set(all.values.flatMap { $0.columns.compactMap { $0.references?.lowercased() } })
        let referenceOnly = all.filter { !subscribed.contains($0.key) }.sorted { $0.key < $1.key }.map(\.value)
        return (referenceOnly, targets)
    }

    /// One page of a round of ``RowsRequest``.
    func rows(space: Int64, request: RowsRequest, subscriptions: [SubsetEvaluator.Checked], schema: SyncSchema, limit: Int) async throws -> RowsResponse {
        let (referenceOnly, targets) = Self.subsetTables(subscriptions, schema: schema)
        let phases = subscriptions.count + (request.since > 0 ? referenceOnly.count : 0)
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            // One snapshot for the page: its rows are all as they were at `head`.
            try await connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
            var head: Int64 = 0
            for try await value in try await connection.query("SELECT head FROM sluice_space WHERE id = \(space)", logger: logger).decode(Int64.self) {
                head = value
            }
            var changes: [SyncChange] = []
            var sent: Set<String> = []
            var inserted: [SubsetEvaluator.Row] = []
            var next: RowsPosition?
            var phase = max(request.after?.subscription ?? 0, 0)
            var after = request.after?.id ?? ""
            while phase < phases, next == nil {
                let room = limit - changes.count
                let subscription = phase < subscriptions.count ? subscriptions[phase] : nil
                let table = subscription?.table ?? referenceOnly[phase - subscriptions.count]
                let paths = subscription?.pathColumns ?? []
                let candidates = try await Self.changedRows(table: table.name, space: space, since: request.since, after: after, limit: room,
                                                            pathColumns: paths, connection: connection, logger: logger)
                let live = candidates.filter { !$0.deleted }.map(\.row)
                var kept: Set<String> = []
                if let subscription {
                    kept = try await Self.kept(live, by: subscription, schema: schema, space: space, connection: connection, logger: logger)
                }
                // A row not kept by a subscription goes with its values only while a row the
                // device keeps points at it (a changed row of a table pointed at: only then).
                if subscription == nil || targets.contains(table.name.lowercased()) {
                    let others = Set(live.map(\.id)).subtracting(kept)
                    kept.formUnion(try await Self.pointedAtByKept(table: table.name, ids: others, subscriptions: subscriptions, held: subscriptions.map(\.table) + referenceOnly,
                                                                  schema: schema, space: space, connection: connection, logger: logger))
                }
                for candidate in candidates {
                    let row = candidate.row
                    let key = row.table.lowercased() + "\u{0}" + row.id
                    if candidate.deleted {
                        changes.append(SyncChange(table: table.name, id: row.id, op: .delete))
                    } else if kept.contains(row.id) {
                        guard sent.insert(key).inserted else { continue }
                        changes.append(SyncChange(table: table.name, id: row.id, op: .insert, values: row.values, clocks: candidate.clocks))
                        inserted.append(row)
                    } else {
                        changes.append(SyncChange(table: table.name, id: row.id, op: .leave))
                    }
                }
                if candidates.count >= room, let last = candidates.last {
                    next = RowsPosition(subscription: phase, id: last.row.id)
                } else {
                    phase += 1
                    after = ""
                }
            }
            // The rows the inserted rows point at, and the rows those point at.
            var pending = inserted
            while !pending.isEmpty {
                var wanted: [String: Set<String>] = [:]
                for row in pending {
                    guard let table = schema.table(named: row.table) else { continue }
                    for column in table.columns {
                        guard let parent = column.references?.lowercased(), case .reference(let gid)? = row.values[column.name],
                              !sent.contains(parent + "\u{0}" + gid) else { continue }
                        wanted[parent, default: []].insert(gid)
                    }
                }
                pending = []
                for (parent, ids) in wanted.sorted(by: { $0.key < $1.key }) {
                    guard let table = schema.table(named: parent) else { continue }
                    for stored in try await Self.storedRows(table: parent, ids: ids.sorted(), space: space, connection: connection, logger: logger)
                    where !stored.deleted && sent.insert(parent + "\u{0}" + stored.row.id).inserted {
                        changes.append(SyncChange(table: table.name, id: stored.row.id, op: .insert, values: stored.row.values, clocks: stored.clocks))
                        pending.append(stored.row)
                    }
                }
            }
            return RowsResponse(head: head, changes: changes, next: next)
        }
    }

    /// A row as `sluice_row` holds it.
    struct StoredRow {
        var row: SubsetEvaluator.Row
        var deleted: Bool
        var clocks: [String: Int64]
    }

    /// Rows of `table` after `after` (by id) changed after `since`, or whose parent along
    /// `pathColumns` changed after it; with `since` 0, every live row.
    static func changedRows(table: String, space: Int64, since: Int64, after: String, limit: Int, pathColumns: [SyncSchema.Column],
                            connection: PostgresConnection, logger: Logger) async throws -> [StoredRow] {
        let columns = pathColumns.map(\.name)
        let parents = pathColumns.map { $0.references?.lowercased() ?? "" }
        let rows = try await connection.query("""
            SELECT r.id, r.vals::text, r.deleted, coalesce(r.clocks, '{}'::jsonb)::text FROM sluice_row r
            WHERE r.space_id = \(space) AND r.tbl = \(table.lowercased()) AND r.id > \(after)
              AND CASE WHEN \(since) = 0 THEN NOT r.deleted
                ELSE r.seq > \(since) OR (NOT r.deleted AND EXISTS (
                  SELECT 1 FROM unnest(\(columns)::text[], \(parents)::text[]) AS k (col, parent)
                  JOIN sluice_row p ON p.space_id = r.space_id AND p.tbl = k.parent AND p.id = r.vals -> k.col ->> 'ref'
                  WHERE p.seq > \(since))) END
            ORDER BY r.id LIMIT \(Int64(max(limit, 1)))
            """, logger: logger)
        return try await decode(rows, table: table)
    }

    /// The rows of `table` with these ids.
    static func storedRows(table: String, ids: [String], space: Int64, connection: PostgresConnection, logger: Logger) async throws -> [StoredRow] {
        guard !ids.isEmpty else { return [] }
        let rows = try await connection.query("""
            SELECT r.id, r.vals::text, r.deleted, coalesce(r.clocks, '{}'::jsonb)::text FROM sluice_row r
            WHERE r.space_id = \(space) AND r.tbl = \(table.lowercased()) AND r.id = ANY(\(ids)) ORDER BY r.id
            """, logger: logger)
        return try await decode(rows, table: table)
    }

    static func decode(_ rows: PostgresRowSequence, table: String) async throws -> [StoredRow] {
        let decoder = JSONDecoder()
        var result: [StoredRow] = []
        for try await (id, vals, deleted, clocks) in rows.decode((String, String, Bool, String).self) {
            result.append(StoredRow(row: SubsetEvaluator.Row(table: table, id: id, values: try decoder.decode([String: SyncValue].self, from: Data(vals.utf8))),
                                    deleted: deleted, clocks: try decoder.decode([String: Int64].self, from: Data(clocks.utf8))))
        }
        return result
    }
}
