import Foundation
import Logging
import PostgresNIO
import SluiceSyncProtocol

/// What ``SyncStorage/push(_:space:token:policy:)`` checks a push's fresh transactions
/// against, inside its transaction: CHECK constraints on the rows they leave, replays of
/// another device's transactions, and whether they commute with the history their device
/// has not pulled.
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

    /// The first of `transactions` that another device pushed already, clock, number and
    /// changes alike (an old push sent again under a new device id: a copy of a store file
    /// has the original's log, numbers included), with that device's id.
    ///
    /// The number matters: two devices that make the same change in the same millisecond
    /// (both delete one row) have the same clock and changes, and refusing the second as a
    /// replay left it refused at every try.
    static func replayed(_ transactions: [SyncTransaction], device: String, space: Int64,
                         connection: PostgresConnection, logger: Logger) async throws -> (local: Int64, device: String)? {
        guard !transactions.isEmpty else { return nil }
        let rows = try await connection.query("""
            SELECT device, clock, local, changes FROM sluice_txn
            WHERE space_id = \(space) AND clock = ANY(\(transactions.map(\.clock.rawValue))) AND device <> \(device)
            """, logger: logger)
        let decoder = JSONDecoder()
        for try await (other, clock, local, json) in rows.decode((String, Int64, Int64, String).self) {
            let changes = try decoder.decode([SyncChange].self, from: Data(json.utf8))
            if let match = transactions.first(where: { $0.clock.rawValue == clock && $0.local == local && $0.changes == changes }) {
                return (match.local, other)
            }
        }
        return nil
    }

    /// The most transactions a push may come after without its device having pulled them.
    static let longestSequencedGap: Int64 = 1_000

    /// Whether `transactions` write nothing the history after `base` wrote: no column of a
    /// row both update, and no row one inserts or deletes that the other writes at all; and
    /// the last number it read (`base` when there was nothing). More than
    /// ``longestSequencedGap`` transactions after `base` do not commute.
    static func commute(_ transactions: [SyncTransaction], withHistoryAfter base: Int64, space: Int64,
                        connection: PostgresConnection, logger: Logger) async throws -> (commutes: Bool, last: Int64) {
        var columns: [String: Set<String>] = [:]
        var whole: Set<String> = []
        var last = base
        var count: Int64 = 0
        // PostgreSQL reads each change's row and the columns an update writes (a row per
        // change; a transaction with none gives one row of NULLs): decoding the changes'
        // values here was most of a crowded push's time under the space's lock.
        let rows = try await connection.query("""
            SELECT x.seq, c."table", c.id, c.op,
                   CASE WHEN jsonb_typeof(c."values") = 'object' THEN ARRAY(SELECT jsonb_object_keys(c."values")) END
            FROM (SELECT seq, changes FROM sluice_txn WHERE space_id = \(space) AND seq > \(base) ORDER BY seq LIMIT \(longestSequencedGap + 1)) x
            LEFT JOIN LATERAL jsonb_to_recordset(x.changes::jsonb) AS c ("table" TEXT, id TEXT, op TEXT, "values" JSONB) ON true
            ORDER BY x.seq
            """, logger: logger)
        for try await (seq, table, id, op, keys) in rows.decode((Int64, String?, String?, String?, [String]?).self) {
            if seq != last {
                last = seq
                count += 1
            }
            guard let table, let id else { continue }
            let row = table.lowercased() + "\u{0}" + id
            if op == SyncChange.Operation.update.rawValue {
                columns[row, default: []].formUnion((keys ?? []).map { $0.lowercased() })
            } else {
                whole.insert(row)
            }
        }
        guard count <= longestSequencedGap else { return (false, last) }
        for transaction in transactions {
            for change in transaction.changes {
                let row = change.table.lowercased() + "\u{0}" + change.id
                if whole.contains(row) { return (false, last) }
                if change.op != .update {
                    if columns[row] != nil { return (false, last) }
                } else if let written = columns[row], (change.values ?? [:]).keys.contains(where: { written.contains($0.lowercased()) }) {
                    return (false, last)
                }
            }
        }
        return (true, last)
    }
}
