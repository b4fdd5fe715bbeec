import Foundation
import Logging
import PostgresNIO
import SluiceSyncProtocol

/// Which rows of a table a subset device keeps for being pointed at: partial sync sends a
/// changed row of a table the subscriptions' rows point at with its values only when a row
/// the device keeps points at it (``SyncStorage/rows(space:request:subscriptions:schema:limit:)``).
extension SyncStorage {
    /// The live rows of a subscription's table that it keeps, among `live`: every one
    /// without a filter; with one, evaluated with the rows its path columns point at.
    static func kept(_ live: [SubsetEvaluator.Row], by subscription: SubsetEvaluator.Checked, schema: SyncSchema, space: Int64,
                     connection: PostgresConnection, logger: Logger) async throws -> Set<String> {
        guard subscription.filter != nil else { return Set(live.map(\.id)) }
        var references: [String: Set<String>] = [:]
        for row in live {
            for column in subscription.pathColumns {
                if case .reference(let gid)? = row.values[column.name], let parent = column.references { references[parent.lowercased(), default: []].insert(gid) }
            }
        }
        var parents: [SubsetEvaluator.Row] = []
        for (parent, ids) in references {
            parents += try await storedRows(table: parent, ids: Array(ids), space: space, connection: connection, logger: logger)
                .filter { !$0.deleted }.map(\.row)
        }
        return try SubsetEvaluator.kept(live, by: subscription, parents: parents, schema: schema)
    }

    /// Of `ids` (rows of `table`), those a row the device keeps points at: a live row its
    /// subscription keeps, or a live row of a table the device holds for being pointed at
    /// that such a row points at in turn (followed `depth` steps at most).
    static func pointedAtByKept(table: String, ids: Set<String>, subscriptions: [SubsetEvaluator.Checked], held: [SyncSchema.Table], schema: SyncSchema,
                                space: Int64, connection: PostgresConnection, logger: Logger, depth: Int = 8) async throws -> Set<String> {
        guard !ids.isEmpty, depth > 0 else { return [] }
        var found: Set<String> = []
        for child in held {
            for column in child.columns where column.references?.lowercased() == table.lowercased() {
                let rows = try await connection.query("""
                    SELECT r.id, r.vals::text, r.deleted, coalesce(r.clocks, '{}'::jsonb)::text FROM sluice_row r
                    WHERE r.space_id = \(space) AND r.tbl = \(child.name.lowercased()) AND NOT r.deleted
                      AND r.vals -> \(column.name) ->> 'ref' = ANY(\(Array(ids)))
                    """, logger: logger)
                let live = try await decode(rows, table: child.name).map(\.row)
                guard !live.isEmpty else { continue }
                var pointing: Set<String> = []
                if let subscription = subscriptions.first(where: { $0.table.name.lowercased() == child.name.lowercased() }) {
                    pointing = try await kept(live, by: subscription, schema: schema, space: space, connection: connection, logger: logger)
                }
                let rest = Set(live.map(\.id)).subtracting(pointing)
                pointing.formUnion(try await pointedAtByKept(table: child.name, ids: rest, subscriptions: subscriptions, held: held, schema: schema,
                                                            space: space, connection: connection, logger: logger, depth: depth - 1))
                for row in live where pointing.contains(row.id) {
                    if case .reference(let gid)? = row.values[column.name] { found.insert(gid) }
                }
            }
        }
        return found
    }
}
