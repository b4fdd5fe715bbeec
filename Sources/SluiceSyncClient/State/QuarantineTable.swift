import Foundation
import SluiceSyncProtocol
import Sluice

/// `sluice_sync_quarantine`: pulled transactions this device could not apply (a value its
/// schema refuses, a column it does not have), each with the error it failed with, kept
/// until applied again or discarded. The only code that reads or writes the table.
struct QuarantineTable {
    static let name = "sluice_sync_quarantine"

    struct Entry {
        var transaction: SyncTransaction
        var error: String
        var date: Date
    }

    let db: Database

    init(_ db: Database) { self.db = db }

    /// Sets `transaction` (pulled at `seq`) aside with `error`.
    func add(_ transaction: SyncTransaction, seq: Int64, error: String, at date: Date = Date()) throws {
        let changes = String(decoding: try JSONEncoder().encode(transaction.changes), as: UTF8.self)
        try db.execute(sql: """
            INSERT OR REPLACE INTO sluice_sync_quarantine (seq, device, local, clock, changes, error, at) VALUES (?, ?, ?, ?, ?, ?, ?)
            """, arguments: [.integer(seq), .text(transaction.device), .integer(transaction.local), .integer(transaction.clock.rawValue),
                             .text(changes), .text(error), .integer(Self.milliseconds(date))])
    }

    /// Every entry, oldest first (none when a client never opened the store).
    func entries() throws -> [Entry] {
        guard try db.tableExists(Self.name) else { return [] }
        let decoder = JSONDecoder()
        return try db.fetchRows(sql: "SELECT seq, device, local, clock, changes, error, at FROM sluice_sync_quarantine ORDER BY seq").compactMap { row in
            guard case .integer(let seq) = row[0], case .text(let device) = row[1], case .integer(let local) = row[2],
                  case .integer(let clock) = row[3], case .text(let changes) = row[4], case .text(let error) = row[5],
                  case .integer(let at) = row[6] else { return nil }
            let decoded = try decoder.decode([SyncChange].self, from: Data(changes.utf8))
            return Entry(transaction: SyncTransaction(seq: seq, device: device, local: local, clock: HybridClock(rawValue: clock), changes: decoded),
                         error: error, date: Date(timeIntervalSince1970: Double(at) / 1000))
        }
    }

    func count() throws -> Int {
        guard try db.tableExists(Self.name),
              case .integer(let count)? = try db.fetchRows(sql: "SELECT count(*) FROM sluice_sync_quarantine").first?[0] else { return 0 }
        return Int(count)
    }

    /// Drops the entry of `seq` (applied again, or discarded).
    func remove(_ seq: Int64) throws {
        try db.execute(sql: "DELETE FROM sluice_sync_quarantine WHERE seq = ?", arguments: [.integer(seq)])
    }

    func removeAll() throws {
        try db.execute(sql: "DELETE FROM sluice_sync_quarantine")
    }

    /// Records a new error for an entry that failed again.
    func update(_ seq: Int64, error: String, at date: Date = Date()) throws {
        try db.execute(sql: "UPDATE sluice_sync_quarantine SET error = ?, at = ? WHERE seq = ?",
                       arguments: [.text(error), .integer(Self.milliseconds(date)), .integer(seq)])
    }

    private static func milliseconds(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970 * 1000) }
}
