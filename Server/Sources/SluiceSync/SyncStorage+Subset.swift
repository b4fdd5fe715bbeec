import Foundation
import Logging
import PostgresNIO
import SluiceSyncPolicy
import SluiceSyncProtocol
import SluiceSyncStore

/// Partial sync over PostgreSQL: a page of a round of ``RowsRequest`` (``SubsetPages``) read
/// from `sluice_row` in one snapshot.
extension SyncStorage {
    /// One page of a round of ``RowsRequest``.
    func rows(space: Int64, request: RowsRequest, subscriptions: [SubsetEvaluator.Checked], schema: SyncSchema, limit: Int) async throws -> RowsResponse {
        try await inPageSnapshot(space: space) { source in
            try await SubsetPages.page(request, subscriptions: subscriptions, schema: schema, limit: limit, rows: source)
        }
    }

    /// The same page as JSON, the rows it passes on written as `sluice_row` holds them
    /// (``SubsetPages/encodedPage(_:subscriptions:schema:limit:rows:)``).
    func encodedRows(space: Int64, request: RowsRequest, subscriptions: [SubsetEvaluator.Checked], schema: SyncSchema, limit: Int) async throws -> Data {
        try await inPageSnapshot(space: space) { source in
            try await SubsetPages.encodedPage(request, subscriptions: subscriptions, schema: schema, limit: limit, rows: source)
        }
    }

    /// `body` in a read-only transaction: one snapshot for the page, whose rows are then all
    /// as they were at its `head`.
    private func inPageSnapshot<T: Sendable>(space: Int64, _ body: @Sendable (PostgresSubsetSource) async throws -> T) async throws -> T {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
            return try await body(PostgresSubsetSource(connection: connection, space: space, logger: logger))
        }
    }
}

/// A space's `sluice_row` inside a page's read-only transaction.
struct PostgresSubsetSource: SubsetSource {
    let connection: PostgresConnection
    let space: Int64
    let logger: Logger

    func head() async throws -> Int64 {
        var head: Int64 = 0
        for try await value in try await connection.query("SELECT head FROM sluice_space WHERE id = \(space)", logger: logger).decode(Int64.self) {
            head = value
        }
        return head
    }

    func changedRows(_ table: String, since: Int64, after: String, limit: Int, paths: [(column: String, parent: String)]) async throws -> [StoredRow] {
        try await changedRows(table, since: since, after: after, limit: limit, paths: paths, decoding: true)
    }

    func changedRows(_ table: String, since: Int64, after: String, limit: Int, paths: [(column: String, parent: String)],
                     decoding: Bool) async throws -> [StoredRow] {
        let columns = paths.map(\.column)
        let parents = paths.map(\.parent)
        return try await decode(connection.query("""
            SELECT r.id, r.vals::text, r.deleted, coalesce(r.clocks, '{}'::jsonb)::text, r.seq FROM sluice_row r
            WHERE r.space_id = \(space) AND r.tbl = \(table) AND r.id > \(after)
              AND CASE WHEN \(since) = 0 THEN NOT r.deleted
                ELSE r.seq > \(since) OR (NOT r.deleted AND EXISTS (
                  SELECT 1 FROM unnest(\(columns)::text[], \(parents)::text[]) AS k (col, parent)
                  JOIN sluice_row p ON p.space_id = r.space_id AND p.tbl = k.parent AND p.id = r.vals -> k.col ->> 'ref'
                  WHERE p.seq > \(since))) END
            ORDER BY r.id LIMIT \(Int64(max(limit, 1)))
            """, logger: logger), table: table, decoding: decoding)
    }

    func storedRows(_ table: String, ids: [String]) async throws -> [StoredRow] {
        guard !ids.isEmpty else { return [] }
        return try await decode(connection.query("""
            SELECT r.id, r.vals::text, r.deleted, coalesce(r.clocks, '{}'::jsonb)::text, r.seq
            FROM unnest(\(Array(Set(ids)))::text[]) AS x(id) CROSS JOIN LATERAL
              (SELECT id, vals, deleted, clocks, seq FROM sluice_row WHERE space_id = \(space) AND tbl = \(table) AND id = x.id LIMIT 1) r
            ORDER BY r.id
            """, logger: logger), table: table)
    }

    func liveRows(_ table: String, whose column: String, referencesOneOf ids: [String]) async throws -> [StoredRow] {
        try await decode(connection.query("""
            SELECT r.id, r.vals::text, r.deleted, coalesce(r.clocks, '{}'::jsonb)::text, r.seq FROM sluice_row r
            WHERE r.space_id = \(space) AND r.tbl = \(table) AND NOT r.deleted AND r.vals -> \(column) ->> 'ref' = ANY(\(ids))
            """, logger: logger), table: table)
    }

    /// The rows read (id, values, deleted, clocks, seq), their values and clocks decoded, or
    /// (unless `decoding`) kept as the JSON text as stored.
    private func decode(_ rows: PostgresRowSequence, table: String, decoding: Bool = true) async throws -> [StoredRow] {
        var result: [StoredRow] = []
        for try await (id, vals, deleted, clocks, seq) in rows.decode((String, String, Bool, String, Int64).self) {
            var row = decoding
                ? StoredRow(table: table, id: id, values: try SyncJSON.decode([String: SyncValue].self, from: Data(vals.utf8)),
                            deleted: deleted, clocks: try SyncJSON.decode([String: Int64].self, from: Data(clocks.utf8)))
                : StoredRow(table: table, id: id, stored: StoredRow.Stored(values: vals, clocks: clocks), deleted: deleted)
            row.seq = seq
            result.append(row)
        }
        return result
    }
}
