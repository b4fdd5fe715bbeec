import Foundation
import Sluice

/// A rowid names one row at a time, not one row for ever: SQLite gives a deleted row's rowid
/// to the next row inserted when it was the largest, and an app may insert an id it deleted
/// before. The global id follows the row, not the rowid: a row deleted here in one
/// transaction and a row inserted on its rowid in a later one are two rows, pushed under two
/// global ids (a delete and an insert in one transaction, as `INSERT OR REPLACE` does, stay
/// one row). Pushed under the old id, the new row would bring the deleted one back on every
/// device, where rows that pointed at it had already let it go.
///
/// `sluice_sync_retired` records, per rowid, each local delete not followed by an insert in
/// its transaction (log sequence `seq`): the global id the row had (`gid`), and the one the
/// next row on the rowid got (`next`, made when that row's insert is first pushed, at
/// `reinserted`), so that a push built again (after a failure) names the same rows. Records
/// go once the transactions they concern are acknowledged.
extension SyncEngine {
    /// The global id of the row that rowid `local` held at log sequence `seq` (a change
    /// logged then); with `creating`, made for a row that has none yet.
    func globalID(_ table: String, _ local: Int64, at seq: Int64, creating: Bool, _ db: Database) throws -> String? {
        let retired = try RetiredIDs(db).retirements(table, local)
        guard !retired.isEmpty else { return creating ? try globalIDCreating(table, local, db) : try globalID(table, local, db) }
        if let last = retired.last(where: { $0.seq < seq }) {
            if let next = last.next { return next }
            guard creating else { return nil }
            // The first row on this rowid after the deleted one: a new row.
            let next = RandomID.timeOrdered()
            try RetiredIDs(db).setNext(table, local, retiredAt: last.seq, next: next, reinserted: seq)
            try IdentityMap(db).map(table, local: local, to: next, pulled: false)
            return next
        }
        return retired.first { $0.seq >= seq }?.gid
    }

    /// Records that the row `gid` on rowid `local` was deleted at `seq` for good (its
    /// transaction did not insert the rowid again).
    func retire(_ table: String, _ local: Int64, gid: String, at seq: Int64, _ db: Database) throws {
        try RetiredIDs(db).add(table, local, gid: gid, at: seq)
    }

    /// Gives the unpushed transactions' rows their global ids as a push would (a row
    /// deleted and not inserted again in its transaction ends its id; the next row on its
    /// rowid gets a new one), before pulled changes are matched to local rows by global id:
    /// otherwise a pulled change to the deleted row would land on the row now on its rowid.
    func settleLifetimes(_ unpushed: [(LoggedTransaction, [LocalChange])], _ db: Database) throws {
        var deleted: Set<RowKey> = []
        for (_, changes) in unpushed {
            for change in changes where change.operation == .delete { deleted.insert(RowKey(table: change.table.lowercased(), rowID: change.rowID)) }
        }
        guard !deleted.isEmpty else { return }
        for (transaction, changes) in unpushed {
            let seq = transaction.token.sequence
            for (position, change) in changes.enumerated() {
                let name = change.table.lowercased()
                guard tables[name] != nil, deleted.contains(RowKey(table: name, rowID: change.rowID)) else { continue }
                switch change.operation {
                case .delete:
                    guard let gid = try globalID(name, change.rowID, at: seq, creating: false, db) else { continue }
                    if Self.endsRow(changes, at: position) { try retire(name, change.rowID, gid: gid, at: seq, db) }
                case .insert:
                    _ = try globalID(name, change.rowID, at: seq, creating: true, db)
                case .update:
                    break
                }
            }
        }
    }

    /// Whether the delete at `position` ends its row: its transaction does not insert the
    /// rowid again after it (`INSERT OR REPLACE` does).
    static func endsRow(_ changes: [LocalChange], at position: Int) -> Bool {
        let delete = changes[position]
        return !changes[(position + 1)...].contains { $0.operation == .insert && $0.rowID == delete.rowID && $0.table.lowercased() == delete.table.lowercased() }
    }

    /// Whether this device deleted the row `gid` and has not had the delete acknowledged: a
    /// pulled insert of it (another device's `INSERT OR REPLACE`, concurrent with the delete)
    /// loses to the delete, which is pushed.
    func deletedHere(_ table: LocalTable, gid: String, _ db: Database) throws -> Bool {
        let name = table.name.lowercased()
        guard try RetiredIDs(db).contains(name, gid: gid) else { return false }
        // Its rowid may hold it again (pulled back before this device's push): then it is here.
        guard let local = try localID(name, gid, db) else { return true }
        return try currentRow(table, local, db) == nil
    }

    /// Whether any delete here waits to be acknowledged (pulls check pulled inserts against
    /// them only then: one query per pulled transaction, not per row).
    func hasRetirements(_ db: Database) throws -> Bool {
        try !RetiredIDs(db).isEmpty()
    }

    /// Drops what no push can need again once the log is pushed through `pushed`: a rowid
    /// whose row was deleted and not replaced forgets the deleted row's id.
    func dropRetirements(through pushed: Int64, _ db: Database) throws {
        let retired = RetiredIDs(db)
        for (name, local, gid) in try retired.unreplaced(through: pushed) {
            guard try globalID(name, local, db) == gid, let table = tables[name], try currentRow(table, local, db) == nil else { continue }
            try forget(name, local, db)
        }
        try retired.removeAll(through: pushed)
    }
}
