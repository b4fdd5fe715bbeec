import SluiceSyncProtocol

/// A space's current rows — what its history folds to — as the service's rules read and
/// write them inside a push's transaction: `sluice_row` in PostgreSQL, or a dictionary in
/// memory. Tables are named in lower case.
public protocol CurrentRows {
    /// The values of the live rows of `table` among `ids`, by id.
    func liveValues(_ table: String, ids: [String]) async throws -> [String: [String: SyncValue]]
    /// The ids of the live rows of `table` whose `column` references one of `parents`.
    func liveRows(_ table: String, whose column: String, referencesOneOf parents: [String]) async throws -> [String]
    /// Those of `ids` that are not live rows of `table` (deleted, or never held).
    func notLive(_ table: String, among ids: [String]) async throws -> [String]
    /// Among `ids`, the live rows of `table` whose `column` references a row of `parent`
    /// that is not live (deleted, or never held).
    func liveRows(_ table: String, among ids: [String], whose column: String, referencesNoLiveRowOf parent: String) async throws -> [String]
    /// Folds `changes` (one net change per row: ``RowFold/net(_:)``) into the rows, written
    /// at `seq` with `clock`.
    func fold(_ changes: [RowFold.Change], seq: Int64, clock: Int64) async throws
}

/// How a transaction's changes fold into current rows.
public enum RowFold {
    /// The net change a transaction makes to one row.
    public struct Change: Sendable, Equatable {
        /// The table, in lower case.
        public var table: String
        public var id: String
        /// `insert` replaces the row (a delete before it is undone); `update` merges into a
        /// live row (an update of a deleted row changes nothing); `delete` marks it deleted;
        /// `leave` changes nothing.
        public var op: SyncChange.Operation
        public var values: [String: SyncValue]
    }

    /// One net change per row, in the order rows are first written: a transaction may write
    /// a row several times, a fold writes it once.
    public static func net(_ changes: [SyncChange]) -> [Change] {
        var order: [String] = []
        var net: [String: Change] = [:]
        for change in changes {
            let table = change.table.lowercased()
            let key = table + "\u{0}" + change.id
            let values = change.values ?? [:]
            guard var existing = net[key] else {
                order.append(key)
                net[key] = Change(table: table, id: change.id, op: change.op, values: values)
                continue
            }
            switch (existing.op, change.op) {
            case (_, .delete): existing = Change(table: table, id: change.id, op: .delete, values: [:])
            case (_, .leave): break
            case (_, .insert): existing = Change(table: table, id: change.id, op: .insert, values: values)
            case (.delete, .update): break
            case (_, .update): existing.values.merge(values) { $1 }
            }
            net[key] = existing
        }
        return order.compactMap { net[$0] }
    }

    /// Whether some row is written more than once (its changes cannot be folded as they are).
    public static func writesARowTwice(_ changes: [SyncChange]) -> Bool {
        // Ids by table: a table's name is lowered once per run of changes spelling it alike
        // (a key made per change was a tenth of the service's time on an upload's part).
        var seen: [String: Set<String>] = [:]
        var last: (spelled: String, lowered: String)?
        for change in changes {
            let table: String
            if let last, last.spelled == change.table { table = last.lowered } else { table = change.table.lowercased() }
            last = (change.table, table)
            guard seen[table, default: Set(minimumCapacity: changes.count)].insert(change.id).inserted else { return true }
        }
        return false
    }
}
