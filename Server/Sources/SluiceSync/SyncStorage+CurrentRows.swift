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
struct PostgresCurrentRows: CurrentRows {
    let connection: PostgresConnection
    let space: Int64
    let logger: Logger

    func liveValues(_ table: String, ids: [String]) async throws -> [String: [String: SyncValue]] {
        let rows = try await connection.query("""
            SELECT id, vals::text FROM sluice_row WHERE space_id = \(space) AND tbl = \(table) AND id = ANY(\(ids)) AND NOT deleted
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

    func liveRows(_ table: String, among ids: [String], whose column: String, referencesNoLiveRowOf parent: String) async throws -> [String] {
        try await self.ids(connection.query("""
            SELECT c.id FROM sluice_row c LEFT JOIN sluice_row p
              ON p.space_id = c.space_id AND p.tbl = \(parent) AND p.id = c.vals -> \(column) ->> 'ref'
            WHERE c.space_id = \(space) AND c.tbl = \(table) AND c.id = ANY(\(ids)) AND NOT c.deleted
              AND c.vals -> \(column) ->> 'ref' IS NOT NULL AND (p.id IS NULL OR p.deleted)
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
