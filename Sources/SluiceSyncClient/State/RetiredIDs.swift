import Sluice

/// `sluice_sync_retired`: per rowid, each local delete not followed by an insert in its
/// transaction (log sequence `seq`): the global id the row had (`gid`), and the one the
/// next row on the rowid got (`next`, made when that row's insert is first pushed, at
/// `reinserted`). See `SyncEngine.globalID(_:_:at:creating:_:)` for how they are used. The
/// only code that reads or writes the table.
struct RetiredIDs {
    struct Retirement {
        var seq: Int64
        var gid: String
        var next: String?
    }

    let db: Database

    init(_ db: Database) { self.db = db }

    /// The retirements of rowid `local`, oldest first.
    func retirements(_ table: String, _ local: Int64) throws -> [Retirement] {
        try db.fetchRows(sql: "SELECT seq, gid, next FROM sluice_sync_retired WHERE tbl = ? AND local = ? ORDER BY seq",
                         arguments: [.text(table), .integer(local)]).compactMap { row in
            guard case .integer(let seq)? = row["seq"], case .text(let gid)? = row["gid"] else { return nil }
            if case .text(let next)? = row["next"] { return Retirement(seq: seq, gid: gid, next: next) }
            return Retirement(seq: seq, gid: gid, next: nil)
        }
    }

    /// Records the id `next` of the row inserted on the rowid after the retirement at `seq`
    /// (by the transaction at `reinserted`).
    func setNext(_ table: String, _ local: Int64, retiredAt seq: Int64, next: String, reinserted: Int64) throws {
        try db.execute(sql: "UPDATE sluice_sync_retired SET next = ?, reinserted = ? WHERE tbl = ? AND local = ? AND seq = ?",
                       arguments: [.text(next), .integer(reinserted), .text(table), .integer(local), .integer(seq)])
    }

    func add(_ table: String, _ local: Int64, gid: String, at seq: Int64) throws {
        try db.execute(sql: "INSERT OR IGNORE INTO sluice_sync_retired (tbl, local, seq, gid) VALUES (?, ?, ?, ?)",
                       arguments: [.text(table), .integer(local), .integer(seq), .text(gid)])
    }

    func contains(_ table: String, gid: String) throws -> Bool {
        try !db.fetchRows(sql: "SELECT 1 FROM sluice_sync_retired WHERE tbl = ? AND gid = ? LIMIT 1", arguments: [.text(table), .text(gid)]).isEmpty
    }

    func isEmpty() throws -> Bool { try db.fetchRows(sql: "SELECT 1 FROM sluice_sync_retired LIMIT 1").isEmpty }

    /// The rows deleted for good at or before `seq` with no row on their rowid since.
    func unreplaced(through seq: Int64) throws -> [(table: String, local: Int64, gid: String)] {
        try db.fetchRows(sql: "SELECT tbl, local, gid FROM sluice_sync_retired WHERE seq <= ? AND next IS NULL", arguments: [.integer(seq)]).compactMap { row in
            guard case .text(let name)? = row["tbl"], case .integer(let local)? = row["local"], case .text(let gid)? = row["gid"] else { return nil }
            return (name, local, gid)
        }
    }

    /// Drops the retirements no push can need once the log is pushed through `seq`.
    func removeAll(through seq: Int64) throws {
        try db.execute(sql: "DELETE FROM sluice_sync_retired WHERE seq <= ?1 AND (next IS NULL OR reinserted <= ?1)", arguments: [.integer(seq)])
    }
}
