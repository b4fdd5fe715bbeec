import Sluice

/// The small ledgers of what the next push must carry beyond the log, each the only code
/// that reads or writes its table:
///
/// - ``Resurrections`` (`sluice_sync_resurrect`): rows whose pending update beat a pulled
///   delete; the next push brings them back everywhere.
/// - ``FixUps`` (`sluice_sync_fixup`): rows other devices wrote pointing at a parent this
///   device deleted, pushed as deletes (a NOT NULL reference, `col` empty) or as NULL (a
///   nullable one), so the service ends as every device's ON DELETE action leaves them;
///   and (with `ref`) this device's unpushed references to a parent another device
///   deleted, which the pulled delete's local ON DELETE action overwrote: pushed as they
///   were written, so that the service applies the action to them too.
/// - ``MergeResults`` (`sluice_sync_merge`): merge results recorded with the pulled
///   transaction they settle, written (and pushed) by the next local transaction.
struct Resurrections {
    let db: Database

    init(_ db: Database) { self.db = db }

    func add(_ table: String, _ local: Int64) throws {
        try db.execute(sql: "INSERT OR IGNORE INTO sluice_sync_resurrect (tbl, local) VALUES (?, ?)", arguments: [.text(table), .integer(local)])
    }

    func all() throws -> [(table: String, local: Int64)] {
        try db.fetchRows(sql: "SELECT tbl, local FROM sluice_sync_resurrect").compactMap { row in
            guard case .text(let name)? = row["tbl"], case .integer(let local)? = row["local"] else { return nil }
            return (name, local)
        }
    }

    func removeAll() throws { try db.execute(sql: "DELETE FROM sluice_sync_resurrect") }
}

struct FixUps {
    struct Entry {
        var table: String
        var gid: String
        /// Empty: the row is deleted.
        var column: String
        /// The parent's global id the column is pushed with; nil: NULL.
        var reference: String?
    }

    let db: Database

    init(_ db: Database) { self.db = db }

    /// Records the row's deletion (`column` nil), or NULL for `column`, unless recorded already.
    func add(_ table: String, _ gid: String, column: String?) throws {
        try db.execute(sql: "INSERT OR IGNORE INTO sluice_sync_fixup (tbl, gid, col) VALUES (?, ?, ?)",
                       arguments: [.text(table), .text(gid), .text(column ?? "")])
    }

    /// Records that `column` of the row is pushed pointing at `parent`, as it was written.
    func keep(_ table: String, _ gid: String, column: String, pointingAt parent: String) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO sluice_sync_fixup (tbl, gid, col, ref) VALUES (?, ?, ?, ?)",
                       arguments: [.text(table), .text(gid), .text(column), .text(parent)])
    }

    func entries() throws -> [Entry] {
        try db.fetchRows(sql: "SELECT tbl, gid, col, ref FROM sluice_sync_fixup ORDER BY tbl, gid, col").compactMap { row in
            guard case .text(let name)? = row["tbl"], case .text(let gid)? = row["gid"], case .text(let column)? = row["col"] else { return nil }
            if case .text(let parent)? = row["ref"] { return Entry(table: name, gid: gid, column: column, reference: parent) }
            return Entry(table: name, gid: gid, column: column, reference: nil)
        }
    }

    func isEmpty() throws -> Bool { try db.fetchRows(sql: "SELECT 1 FROM sluice_sync_fixup LIMIT 1").isEmpty }

    func removeAll() throws { try db.execute(sql: "DELETE FROM sluice_sync_fixup") }
}

struct MergeResults {
    struct Entry {
        var table: String
        var local: Int64
        var column: String
        var value: SQLiteValue
    }

    let db: Database

    init(_ db: Database) { self.db = db }

    func record(_ table: String, _ local: Int64, column: String, _ value: SQLiteValue) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO sluice_sync_merge (tbl, local, col, value) VALUES (?, ?, ?, ?)",
                       arguments: [.text(table), .integer(local), .text(column), value])
    }

    func entries() throws -> [Entry] {
        try db.fetchRows(sql: "SELECT tbl, local, col, value FROM sluice_sync_merge").compactMap { row in
            guard case .text(let name)? = row["tbl"], case .integer(let local)? = row["local"], case .text(let column)? = row["col"] else { return nil }
            return Entry(table: name, local: local, column: column, value: row["value"] ?? .null)
        }
    }

    func removeAll() throws { try db.execute(sql: "DELETE FROM sluice_sync_merge") }
}
