import Foundation
import Sluice

/// `sluice_sync_id`: which global id each local row has, `(table, local id) ↔ global id`,
/// one logical row per local id, and whether the row came from the service (`pulled`) or
/// was made here. Tables are named in lower case. The only code that writes the table.
struct IdentityMap {
    static let name = "sluice_sync_id"

    let db: Database

    init(_ db: Database) { self.db = db }

    func globalID(_ table: String, _ local: Int64) throws -> String? {
        let rows = try db.fetchRows(sql: "SELECT gid FROM sluice_sync_id WHERE tbl = ? AND local = ?", arguments: [.text(table), .integer(local)])
        if case .text(let gid)? = rows.first?["gid"] { return gid }
        return nil
    }

    /// The row's global id, made (a new time-ordered UUID) when it has none yet.
    func globalIDCreating(_ table: String, _ local: Int64) throws -> String {
        if let gid = try globalID(table, local) { return gid }
        let gid = RandomID.timeOrdered()
        try db.execute(sql: "INSERT INTO sluice_sync_id (tbl, local, gid) VALUES (?, ?, ?)", arguments: [.text(table), .integer(local), .text(gid)])
        return gid
    }

    func localID(_ table: String, _ gid: String) throws -> Int64? {
        let rows = try db.fetchRows(sql: "SELECT local FROM sluice_sync_id WHERE tbl = ? AND gid = ?", arguments: [.text(table), .text(gid)])
        if case .integer(let local)? = rows.first?["local"] { return local }
        return nil
    }

    /// Names local row `local` by `gid`; whatever held that local id or that global id before
    /// lets it go (both are unique).
    func map(_ table: String, local: Int64, to gid: String, pulled: Bool) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO sluice_sync_id (tbl, local, gid, pulled) VALUES (?, ?, ?, ?)",
                       arguments: [.text(table), .integer(local), .text(gid), .integer(pulled ? 1 : 0)])
    }

    func remove(_ table: String, _ local: Int64) throws {
        try db.execute(sql: "DELETE FROM sluice_sync_id WHERE tbl = ? AND local = ?", arguments: [.text(table), .integer(local)])
    }

    /// The rows of `table` with a global id: those pulled, and with `includingMadeHere` also
    /// those made here; with `through`, only those named at or before that ``last()``.
    func rows(of table: String, includingMadeHere: Bool, through last: Int64 = .max) throws -> [(local: Int64, gid: String)] {
        try db.fetchRows(sql: "SELECT local, gid FROM sluice_sync_id WHERE tbl = ? AND (pulled OR ?) AND rowid <= ?",
                         arguments: [.text(table), .integer(includingMadeHere ? 1 : 0), .integer(last)]).compactMap { row in
            guard case .integer(let local)? = row["local"], case .text(let gid)? = row["gid"] else { return nil }
            return (local, gid)
        }
    }

    /// Where the map is now: every row named so far has a `rowid` at most this (one named
    /// later may reuse a freed one, or take a greater one; naming a row again, `map`,
    /// replaces its entry); nil while the map is empty.
    func last() throws -> Int64? {
        if case .integer(let last)? = try db.fetchRows(sql: "SELECT max(rowid) FROM sluice_sync_id").first?[0] { return last }
        return nil
    }

    /// Whether local row `local` of `table` came from the service.
    func isPulled(_ table: String, _ local: Int64) throws -> Bool {
        try !db.fetchRows(sql: "SELECT 1 FROM sluice_sync_id WHERE tbl = ? AND local = ? AND pulled", arguments: [.text(table), .integer(local)]).isEmpty
    }

    /// An SQL condition that holds for the rowids of `table` that came from the service
    /// (`rowid NOT IN (...)` with the table name as the only argument).
    static let pulledRowIDs = "SELECT local FROM sluice_sync_id WHERE tbl = ? AND pulled"
}
