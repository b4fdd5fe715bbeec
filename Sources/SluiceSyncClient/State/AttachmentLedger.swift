import Foundation
import SluiceSyncProtocol
import Sluice

/// The device's attachment tables, and the only code that reads or writes them:
///
/// - `sluice_sync_attachment`: the attachments pulled and not here yet, per row (by global
///   id) and column (lower case): the column is NULL until their bytes are fetched.
/// - `sluice_sync_chunk`: the chunks fetched so far of attachments not complete yet (a cut
///   download goes on from them).
/// - `sluice_sync_held`: which row and column held which attachment when sync last saw it
///   (pushed or fetched), so that bytes here already are not fetched again for another row.
struct AttachmentLedger {
    /// A row's column and the attachment it waits for or held.
    struct Place {
        var table: String
        var gid: String
        var column: String
    }

    let db: Database

    init(_ db: Database) { self.db = db }

    // MARK: - Waiting

    func wait(_ place: Place, for attachment: SyncAttachment) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO sluice_sync_attachment (tbl, gid, col, hash, size) VALUES (?, ?, ?, ?, ?)",
                       arguments: [.text(place.table), .text(place.gid), .text(place.column.lowercased()), .text(attachment.hash), .integer(attachment.size)])
    }

    func stopWaiting(_ place: Place) throws {
        try db.execute(sql: "DELETE FROM sluice_sync_attachment WHERE tbl = ? AND gid = ? AND col = ?",
                       arguments: [.text(place.table), .text(place.gid), .text(place.column.lowercased())])
    }

    /// The attachment `place` waits for.
    func awaited(at place: Place) throws -> SyncAttachment? {
        let row = try db.fetchRows(sql: "SELECT hash, size FROM sluice_sync_attachment WHERE tbl = ? AND gid = ? AND col = ?",
                                   arguments: [.text(place.table), .text(place.gid), .text(place.column.lowercased())]).first
        guard case .text(let hash)? = row?["hash"], case .integer(let size)? = row?["size"] else { return nil }
        return SyncAttachment(hash: hash, size: size)
    }

    func isWaiting() throws -> Bool { try !db.fetchRows(sql: "SELECT 1 FROM sluice_sync_attachment LIMIT 1").isEmpty }

    /// Every waiting place with its attachment, by table, row and column.
    func waiting() throws -> [(Place, SyncAttachment)] {
        try db.fetchRows(sql: "SELECT tbl, gid, col, hash, size FROM sluice_sync_attachment ORDER BY tbl, gid, col").compactMap { row in
            guard case .text(let name)? = row["tbl"], case .text(let gid)? = row["gid"], case .text(let column)? = row["col"],
                  case .text(let hash)? = row["hash"], case .integer(let size)? = row["size"] else { return nil }
            return (Place(table: name, gid: gid, column: column), SyncAttachment(hash: hash, size: size))
        }
    }

    /// The places waiting for the attachment `hash`.
    func waiting(for hash: String) throws -> [Place] {
        try places(sql: "SELECT tbl, gid, col FROM sluice_sync_attachment WHERE hash = ?", hash)
    }

    // MARK: - Chunks

    /// The chunks of `hash` fetched so far, by index.
    func chunks(of hash: String) throws -> [(index: Int64, data: Data)] {
        try db.fetchRows(sql: "SELECT idx, data FROM sluice_sync_chunk WHERE hash = ? ORDER BY idx", arguments: [.text(hash)]).compactMap { row in
            guard case .integer(let index)? = row["idx"] else { return nil }
            switch row["data"] {
            case .blob(let data)?: return (index, data)
            case .text(let text)?: return (index, Data(text.utf8))
            default: return (index, Data())
            }
        }
    }

    func chunkIndexes(of hash: String) throws -> Set<Int> {
        Set(try db.fetchRows(sql: "SELECT idx FROM sluice_sync_chunk WHERE hash = ?", arguments: [.text(hash)]).compactMap { row in
            if case .integer(let index) = row[0] { Int(index) } else { nil }
        })
    }

    func saveChunk(of hash: String, index: Int, _ data: Data) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO sluice_sync_chunk (hash, idx, data) VALUES (?, ?, ?)",
                       arguments: [.text(hash), .integer(Int64(index)), .blob(data)])
    }

    func removeChunks(of hash: String) throws {
        try db.execute(sql: "DELETE FROM sluice_sync_chunk WHERE hash = ?", arguments: [.text(hash)])
    }

    // MARK: - Held

    func hold(_ attachment: SyncAttachment, at place: Place) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO sluice_sync_held (tbl, gid, col, hash) VALUES (?, ?, ?, ?)",
                       arguments: [.text(place.table), .text(place.gid), .text(place.column.lowercased()), .text(attachment.hash)])
    }

    /// The places recorded as holding the attachment `hash`.
    func holders(of hash: String) throws -> [Place] {
        try places(sql: "SELECT tbl, gid, col FROM sluice_sync_held WHERE hash = ?", hash)
    }

    func forgetHolder(_ place: Place) throws {
        try db.execute(sql: "DELETE FROM sluice_sync_held WHERE tbl = ? AND gid = ? AND col = ?",
                       arguments: [.text(place.table), .text(place.gid), .text(place.column)])
    }

    private func places(sql: String, _ hash: String) throws -> [Place] {
        try db.fetchRows(sql: sql, arguments: [.text(hash)]).compactMap { row in
            guard case .text(let name)? = row["tbl"], case .text(let gid)? = row["gid"], case .text(let column)? = row["col"] else { return nil }
            return Place(table: name, gid: gid, column: column)
        }
    }
}
