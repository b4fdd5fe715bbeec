import SluiceSyncProtocol

/// The delete rule, applied by the service so that every copy ends the same: after a push
/// is folded, every live row whose reference (a ``SyncSchema/DeleteRule``) points at a
/// deleted row gets the reference's ON DELETE action: CASCADE deletes it (and, in turn,
/// the rows pointing at it), SET NULL clears the reference. The rows looked at are those
/// pointing at rows the push deleted and those the push wrote a reference in (a parent the
/// space never held counts as deleted), so it holds whatever the order: a parent deleted
/// before or after another device pointed a row at it, by a writer that applied the action
/// (the app) or not (the `sqlite3` shell, where foreign keys are off).
public enum DeleteActions {
    /// The device id of the transactions the service writes itself (the actions); no push
    /// may carry it.
    public static let serviceDevice = "sluice-service"

    /// The rows the actions start from, by table: those a push deletes (parents), and those
    /// in which it writes a reference (children).
    public struct Starts: Sendable {
        public var deleted: [String: Set<String>] = [:]
        /// The references the push writes: by table, by column (lower case), the rows
        /// writing a reference to each parent id.
        public var written: [String: [String: [String: Set<String>]]] = [:]

        /// Whether the push leaves no action to take.
        public var isEmpty: Bool { deleted.isEmpty && written.isEmpty }
    }

    /// Where the actions of `transactions` start, under `rules`.
    public static func starts(_ transactions: [SyncTransaction], rules: [SyncSchema.DeleteRule]) -> Starts {
        var starts = Starts()
        guard !rules.isEmpty else { return starts }
        let children = Set(rules.map(\.table))
        for transaction in transactions {
            for change in transaction.changes {
                let table = change.table.lowercased()
                switch change.op {
                case .delete, .leave:
                    starts.deleted[table, default: []].insert(change.id)
                case .insert, .update:
                    guard children.contains(table), let values = change.values else { continue }
                    for (column, value) in values {
                        guard case .reference(let parent) = value else { continue }
                        starts.written[table, default: [:]][column.lowercased(), default: [:]][parent, default: []].insert(change.id)
                    }
                }
            }
        }
        return starts
    }

    /// Takes the actions from `starts` on `rows`, folding each round at `seq` with `clock`,
    /// and returns their changes for the caller to record as the service's own transaction
    /// (devices apply them as any other; a device that applied the action itself finds
    /// nothing left to do).
    public static func take(from starts: Starts, rules: [SyncSchema.DeleteRule], seq: Int64, clock: Int64, rows: some CurrentRows) async throws -> [SyncChange] {
        var (deleted, written) = (starts.deleted, starts.written)
        var effects: [SyncChange] = []
        // Each round looks at the rows pointing at what the last one deleted (bounded: a
        // cycle of CASCADE references ends when no live row is left to delete).
        for _ in 0..<64 where !deleted.isEmpty || !written.isEmpty {
            var round: [SyncChange] = []
            var next: [String: Set<String>] = [:]
            for rule in rules {
                var found: Set<String> = []
                if let parents = deleted[rule.parent], !parents.isEmpty {
                    found.formUnion(try await rows.liveRows(rule.table, whose: rule.column, referencesOneOf: parents.sorted()))
                }
                if let named = written[rule.table]?[rule.column.lowercased()], !named.isEmpty {
                    // A parent the space never held counts as deleted: no device could apply
                    // the row otherwise (each drops it as its parent's delete would). Only a
                    // row whose pushed reference names a parent that is not live can be left
                    // so: a pushed reference that lost to a later one leaves a reference
                    // checked when it was pushed, whose parent's delete since looked at it.
                    // The parents are looked up first (an upload's part names few, all live),
                    // and only the rows naming those not live are read.
                    let missing = try await rows.notLive(rule.parent, among: named.keys.sorted())
                    let suspects = Set(missing.flatMap { named[$0] ?? [] })
                    if !suspects.isEmpty {
                        found.formUnion(try await rows.liveRows(rule.table, among: suspects.sorted(), whose: rule.column, referencesNoLiveRowOf: rule.parent))
                    }
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
                try await rows.fold(RowFold.net(round), seq: seq, clock: clock)
                effects += round
            }
            deleted = next
            written = [:]
        }
        return effects
    }
}
