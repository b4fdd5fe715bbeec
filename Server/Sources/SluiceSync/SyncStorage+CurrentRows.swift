import Foundation
import Logging
import PostgresNIO
import SluiceSyncPolicy
import SluiceSyncProtocol
import SluiceSyncStore

extension SyncStorage {
    /// What a push is checked against and what the service adds to it (beyond
    /// ``PushDecision``'s rules): CHECK constraints on the rows it leaves, the columns an
    /// older version does not know, the parents' ON DELETE actions.
    struct PushPolicy: Sendable {
        /// How far ahead of the service's clock a transaction's clock may be.
        var maximumSkew: Duration
        /// The CHECK constraints of the registered statements, if any.
        var checker: RowChecker?
        /// The references whose ON DELETE action the service applies.
        var deleteRules: [SyncSchema.DeleteRule] = []
        /// Columns the pushing device's version does not have, by table (lowercased): an
        /// insert of a live row keeps their stored values (``PushRows/keepingUnknownColumns(_:keep:rows:)``).
        var keptColumns: [String: Set<String>] = [:]
    }
}

/// A space's `sluice_row`, inside a push's transaction, as the service's rules read and
/// fold it.
///
/// Rows named by id are read one index probe each, from `unnest(ids)` through a `LATERAL`
/// subquery with `LIMIT 1` (which the planner cannot turn into a scan of the table). With
/// `id = ANY(ids)`, PostgreSQL, whose statistics had not yet seen the rows a first upload
/// had just written (it took the table's range for one row), scanned the table's whole
/// range and compared each row with every id: over a first upload's parts of package
/// items that grew past the push's deadline (19 s; 2.2 s at 10,000 rows), and the push
/// failed (2026-12-06). A join with `unnest(ids)` was planned as a scan of the range too.
struct PostgresCurrentRows: CurrentRows {
    let connection: PostgresConnection
    let space: Int64
    let logger: Logger

    func liveValues(_ table: String, ids: [String]) async throws -> [String: [String: SyncValue]] {
        let rows = try await connection.query("""
            SELECT x.id, r.vals::text FROM unnest(\(Array(Set(ids)))::text[]) AS x(id) CROSS JOIN LATERAL
              (SELECT vals FROM sluice_row WHERE space_id = \(space) AND tbl = \(table) AND id = x.id AND NOT deleted LIMIT 1) r
            """, logger: logger)
        var found: [String: [String: SyncValue]] = [:]
        for try await (id, json) in rows.decode((String, String).self) {
            found[id] = try SyncJSON.decode([String: SyncValue].self, from: Data(json.utf8))
        }
        return found
    }

    func liveRows(_ table: String, whose column: String, referencesOneOf parents: [String]) async throws -> [String] {
        try await ids(connection.query("""
            SELECT c.id FROM sluice_row c
            WHERE c.space_id = \(space) AND c.tbl = \(table) AND NOT c.deleted AND c.vals -> \(column) ->> 'ref' = ANY(\(parents))
            """, logger: logger))
    }

    func notLive(_ table: String, among ids: [String]) async throws -> [String] {
        try await self.ids(connection.query("""
            SELECT x.id FROM unnest(\(Array(Set(ids)))::text[]) AS x(id) LEFT JOIN LATERAL
              (SELECT 1 AS live FROM sluice_row WHERE space_id = \(space) AND tbl = \(table) AND id = x.id AND NOT deleted LIMIT 1) p ON true
            WHERE p.live IS NULL
            """, logger: logger))
    }

    func liveRows(_ table: String, among ids: [String], whose column: String, referencesNoLiveRowOf parent: String) async throws -> [String] {
        try await self.ids(connection.query("""
            SELECT x.id FROM unnest(\(Array(Set(ids)))::text[]) AS x(id) CROSS JOIN LATERAL
              (SELECT vals -> \(column) ->> 'ref' AS ref FROM sluice_row WHERE space_id = \(space) AND tbl = \(table) AND id = x.id AND NOT deleted LIMIT 1) c
            LEFT JOIN LATERAL
              (SELECT 1 AS live FROM sluice_row WHERE space_id = \(space) AND tbl = \(parent) AND id = c.ref AND NOT deleted LIMIT 1) p ON true
            WHERE c.ref IS NOT NULL AND p.live IS NULL
            """, logger: logger))
    }

    func fold(_ changes: [RowFold.Change], seq: Int64, clock: Int64) async throws {
        try await SyncStorage.fold(net: changes, seq: seq, clock: clock, space: space, connection: connection, logger: logger)
    }

    private func ids(_ rows: PostgresRowSequence) async throws -> [String] {
        var found: [String] = []
        for try await id in rows.decode(String.self) { found.append(id) }
        return found
    }
}
