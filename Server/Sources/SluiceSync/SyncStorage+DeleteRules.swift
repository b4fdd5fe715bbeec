import Foundation
import Logging
import PostgresNIO
import SluiceSyncProtocol

extension SyncStorage {
    /// The device id of the transactions the service writes itself (the ON DELETE actions of
    /// ``deleteActions(from:rules:space:seq:connection:logger:encoder:)``); no push may carry it.
    static let serviceDevice = "sluice-service"

    /// The rows ``deleteActions(from:rules:space:seq:connection:logger:encoder:)`` starts
    /// from, by table: those `transactions` delete (parents), and those in which they write a
    /// reference (children). Both empty: the transactions leave no action to take.
    static func deleteActionStarts(_ transactions: [SyncTransaction], rules: [SyncSchema.DeleteRule])
        -> (deleted: [String: Set<String>], written: [String: Set<String>]) {
        guard !rules.isEmpty else { return ([:], [:]) }
        let children = Set(rules.map(\.table))
        var deleted: [String: Set<String>] = [:]
        var written: [String: Set<String>] = [:]
        for transaction in transactions {
            for change in transaction.changes {
                let table = change.table.lowercased()
                switch change.op {
                case .delete, .leave:
                    deleted[table, default: []].insert(change.id)
                case .insert, .update:
                    guard children.contains(table), change.values?.values.contains(where: { if case .reference = $0 { true } else { false } }) == true else { continue }
                    written[table, default: []].insert(change.id)
                }
            }
        }
        return (deleted, written)
    }

    /// The delete rule, applied on the service so that every copy ends the same: after a
    /// push is folded, every live row whose reference (a ``SyncSchema/DeleteRule``) points
    /// at a deleted row gets the reference's ON DELETE action: CASCADE deletes it (and,
    /// in turn, the rows pointing at it), SET NULL clears the reference. The rows looked at
    /// are those pointing at rows the push deleted and those the push wrote a reference
    /// in (a parent the space never held counts as deleted), so it holds whatever the
    /// order: a parent deleted before or after another device
    /// pointed a row at it, by a writer that applied the action (the app) or not (the
    /// `sqlite3` shell, where foreign keys are off).
    ///
    /// Returns the changes, already folded at `seq`, for the caller to record as the
    /// service's own transaction (devices apply them as any other; a device that applied the
    /// action itself finds nothing left to do).
    /// `starts`: ``deleteActionStarts(_:rules:)`` of the push's transactions.
    static func deleteActions(from starts: (deleted: [String: Set<String>], written: [String: Set<String>]), rules: [SyncSchema.DeleteRule],
                              space: Int64, seq: Int64, clock: Int64, connection: PostgresConnection, logger: Logger, encoder: JSONEncoder) async throws -> [SyncChange] {
        var (deleted, written) = starts
        var effects: [SyncChange] = []
        // Each round looks at the rows pointing at what the last one deleted (bounded: a
        // cycle of CASCADE references ends when no live row is left to delete).
        for _ in 0..<64 where !deleted.isEmpty || !written.isEmpty {
            var round: [SyncChange] = []
            var next: [String: Set<String>] = [:]
            for rule in rules {
                var found: Set<String> = []
                if let parents = deleted[rule.parent], !parents.isEmpty {
                    let rows = try await connection.query("""
                        SELECT c.id FROM sluice_row c
                        WHERE c.space_id = \(space) AND c.tbl = \(rule.table) AND NOT c.deleted
                          AND c.vals -> \(rule.column) ->> 'ref' = ANY(\(Array(parents)))
                        """, logger: logger)
                    for try await id in rows.decode(String.self) { found.insert(id) }
                }
                if let ids = written[rule.table], !ids.isEmpty {
                    // A parent the space never held counts as deleted: no device could
                    // apply the row otherwise (each drops it as its parent's delete would).
                    let rows = try await connection.query("""
                        SELECT c.id FROM sluice_row c LEFT JOIN sluice_row p
                          ON p.space_id = c.space_id AND p.tbl = \(rule.parent) AND p.id = c.vals -> \(rule.column) ->> 'ref'
                        WHERE c.space_id = \(space) AND c.tbl = \(rule.table) AND c.id = ANY(\(Array(ids))) AND NOT c.deleted
                          AND c.vals -> \(rule.column) ->> 'ref' IS NOT NULL AND (p.id IS NULL OR p.deleted)
                        """, logger: logger)
                    for try await id in rows.decode(String.self) { found.insert(id) }
                }
                for id in found.sorted() {
                    switch rule.action {
                    case .cascade:
                        round.append(SyncChange(table: rule.table, id: id, op: .delete))
                        next[rule.table, default: []].insert(id)
                    default:
                        round.append(SyncChange(table: rule.table, id: id, op: .update, values: [rule.column: .null]))
                    }
                }
            }
            if !round.isEmpty {
                try await fold(round, seq: seq, clock: clock, space: space, connection: connection, logger: logger, encoder: encoder)
                effects += round
            }
            deleted = next
            written = [:]
        }
        return effects
    }
}
