import Foundation
import Logging
import PostgresNIO
import SluiceSyncProtocol

/// What ``SyncStorage/push(_:space:token:policy:)`` checks a push's fresh transactions
/// against inside its transaction beyond ``PushDecision``'s rules: CHECK constraints on the
/// rows they leave, and the columns an older version does not know.
extension SyncStorage {
    /// What a push is checked against and what the service adds to it.
    struct PushPolicy: Sendable {
        /// How far ahead of the service's clock a transaction's clock may be.
        var maximumSkew: Duration
        /// The CHECK constraints of the registered statements, if any.
        var checker: RowChecker?
        /// The references whose ON DELETE action the service applies.
        var deleteRules: [SyncSchema.DeleteRule] = []
        /// Columns the pushing device's version does not have, by table (lowercased): an
        /// insert of a live row keeps their stored values (``keepingUnknownColumns(_:keep:space:connection:logger:)``).
        var keptColumns: [String: Set<String>] = [:]
    }

    /// `changes` with each insert of a row the space holds live given the stored values of
    /// the columns in `keep` it does not write (a device of an older version replacing a
    /// whole row never erases a column it does not know). Read under the space's lock,
    /// just before the transaction is folded: the values are the ones it would replace.
    static func keepingUnknownColumns(_ changes: [SyncChange], keep: [String: Set<String>], space: Int64,
                                      connection: PostgresConnection, logger: Logger) async throws -> [SyncChange] {
        guard !keep.isEmpty else { return changes }
        var wanted: [String: [String]] = [:]
        for change in changes where change.op == .insert && keep[change.table.lowercased()] != nil {
            wanted[change.table.lowercased(), default: []].append(change.id)
        }
        guard !wanted.isEmpty else { return changes }
        var stored: [String: [String: SyncValue]] = [:]
        let decoder = JSONDecoder()
        for (table, ids) in wanted {
            let rows = try await connection.query("""
                SELECT id, vals::text FROM sluice_row WHERE space_id = \(space) AND tbl = \(table) AND id = ANY(\(ids)) AND NOT deleted
                """, logger: logger)
            for try await (id, json) in rows.decode((String, String).self) {
                stored[table + "\u{0}" + id] = try decoder.decode([String: SyncValue].self, from: Data(json.utf8))
            }
        }
        return changes.map { change in
            let table = change.table.lowercased()
            guard change.op == .insert, let columns = keep[table], let row = stored[table + "\u{0}" + change.id] else { return change }
            var change = change
            var values = change.values ?? [:]
            for (name, value) in row where columns.contains(where: { $0.lowercased() == name.lowercased() })
                && !values.keys.contains(where: { $0.lowercased() == name.lowercased() }) {
                values[name] = value
            }
            change.values = values
            return change
        }
    }

    /// The rows of checked tables as `transactions` leave them, one candidate per change
    /// (an update merged into the row as stored, or as an earlier change of the push left it).
    static func candidates(_ transactions: [SyncTransaction], checker: RowChecker, space: Int64,
                                   connection: PostgresConnection, logger: Logger) async throws -> [RowChecker.Candidate] {
        var updated: [String: Set<String>] = [:]
        for transaction in transactions {
            for change in transaction.changes where change.op == .update && checker.checks(change.table) {
                updated[change.table.lowercased(), default: []].insert(change.id)
            }
        }
        var current: [String: [String: SyncValue]] = [:]
        let decoder = JSONDecoder()
        for (table, ids) in updated {
            let rows = try await connection.query("""
                SELECT id, vals::text FROM sluice_row
                WHERE space_id = \(space) AND tbl = \(table) AND id = ANY(\(Array(ids))) AND NOT deleted
                """, logger: logger)
            for try await (id, json) in rows.decode((String, String).self) {
                current[table + "\u{0}" + id] = try decoder.decode([String: SyncValue].self, from: Data(json.utf8))
            }
        }
        var candidates: [RowChecker.Candidate] = []
        for (index, transaction) in transactions.enumerated() {
            for change in transaction.changes where checker.checks(change.table) {
                let key = change.table.lowercased() + "\u{0}" + change.id
                switch change.op {
                case .insert:
                    current[key] = change.values ?? [:]
                case .update:
                    guard var row = current[key] else { continue }
                    for (name, value) in change.values ?? [:] {
                        // Rows stored before names were normalized may spell a column otherwise.
                        for old in row.keys where old != name && old.lowercased() == name.lowercased() { row[old] = nil }
                        row[name] = value
                    }
                    current[key] = row
                case .delete, .leave:
                    current[key] = nil
                    continue
                }
                candidates.append(RowChecker.Candidate(table: change.table, id: change.id, values: current[key] ?? [:],
                                                       place: "transaction \(index) (local \(transaction.local))"))
            }
        }
        return candidates
    }
}
