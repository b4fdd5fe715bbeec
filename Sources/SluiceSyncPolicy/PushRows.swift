import SluiceSyncProtocol

/// What the service does to a decided push's rows before it folds them, over the space's
/// current rows (read under the push's lock): keeps the columns an older app version does
/// not know, and gives the rows to check against CHECK constraints.
public enum PushRows {
    /// `changes` with each insert of a row the space holds live given the stored values of
    /// the columns in `keep` (by lowercased table) it does not write: a device of an older
    /// version replacing a whole row never erases a column it does not know.
    public static func keepingUnknownColumns(_ changes: [SyncChange], keep: [String: Set<String>], rows: some CurrentRows) async throws -> [SyncChange] {
        guard !keep.isEmpty else { return changes }
        var wanted: [String: [String]] = [:]
        for change in changes where change.op == .insert && keep[change.table.lowercased()] != nil {
            wanted[change.table.lowercased(), default: []].append(change.id)
        }
        guard !wanted.isEmpty else { return changes }
        var stored: [String: [String: SyncValue]] = [:]
        for (table, ids) in wanted {
            for (id, values) in try await rows.liveValues(table, ids: ids) { stored[table + "\u{0}" + id] = values }
        }
        return changes.map { change in
            let table = change.table.lowercased()
            guard change.op == .insert, let columns = keep[table], let row = stored[table + "\u{0}" + change.id] else { return change }
            var change = change
            var values = change.values ?? [:]
            for (name, value) in row where columns.contains(where: { SyncSchema.sameName($0, name) })
                && !values.keys.contains(where: { SyncSchema.sameName($0, name) }) {
                values[name] = value
            }
            change.values = values
            return change
        }
    }

    /// A row as a push leaves it, to check against its table's constraints.
    public struct Candidate: Sendable {
        public var table: String
        public var id: String
        /// Every value the row has after the change (names as written).
        public var values: [String: SyncValue]
        /// Where it came from, for the error.
        public var place: String
    }

    /// The rows of tables that `checks` as `transactions` leave them, one candidate per
    /// change (an update merged into the row as stored, or as an earlier change of the
    /// push left it).
    public static func candidates(_ transactions: [SyncTransaction], checks: (String) -> Bool, rows: some CurrentRows) async throws -> [Candidate] {
        var updated: [String: Set<String>] = [:]
        for transaction in transactions {
            for change in transaction.changes where change.op == .update && checks(change.table) {
                updated[change.table.lowercased(), default: []].insert(change.id)
            }
        }
        var current: [String: [String: SyncValue]] = [:]
        for (table, ids) in updated {
            for (id, values) in try await rows.liveValues(table, ids: ids.sorted()) { current[table + "\u{0}" + id] = values }
        }
        var candidates: [Candidate] = []
        for (index, transaction) in transactions.enumerated() {
            for change in transaction.changes where checks(change.table) {
                let key = change.table.lowercased() + "\u{0}" + change.id
                switch change.op {
                case .insert:
                    current[key] = change.values ?? [:]
                case .update:
                    guard var row = current[key] else { continue }
                    for (name, value) in change.values ?? [:] {
                        // Rows stored before names were normalized may spell a column otherwise.
                        for old in row.keys where old != name && SyncSchema.sameName(old, name) { row[old] = nil }
                        row[name] = value
                    }
                    current[key] = row
                case .delete, .leave:
                    current[key] = nil
                    continue
                }
                candidates.append(Candidate(table: change.table, id: change.id, values: current[key] ?? [:],
                                            place: "transaction \(index) (local \(transaction.local))"))
            }
        }
        return candidates
    }
}
