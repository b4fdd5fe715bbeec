import Sluice
import SluiceSyncProtocol

/// `sluice_sync_origin`: for each pulled transaction applied as a local one, the device that
/// wrote it, its place in the space's history and its clock, keyed by the local log's
/// sequence (written in the transaction that applies it). The only code that reads or
/// writes the table.
struct TransactionOrigins {
    struct Origin: Sendable, Hashable {
        var device: String
        var spaceSeq: Int64
        var clock: HybridClock
    }

    let db: Database

    init(_ db: Database) { self.db = db }

    /// Records one, and drops the origins of transactions the log's retention removed
    /// (nothing reads them: `history()` lists the log), so the table follows the log's size.
    func record(_ seq: Int64, device: String, spaceSeq: Int64, clock: HybridClock) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO sluice_sync_origin (seq, device, space_seq, clock) VALUES (?, ?, ?, ?)",
                       arguments: [.integer(seq), .text(device), .integer(spaceSeq), .integer(clock.rawValue)])
        let pruned = try db.historyPrunedThrough()
        if pruned > 0 {
            try db.execute(sql: "DELETE FROM sluice_sync_origin WHERE seq <= ?", arguments: [.integer(pruned)])
        }
    }

    /// The origins of the local transactions in `sequences`, by sequence (none for a store a
    /// client of this version never opened for writing).
    func origins(of sequences: ClosedRange<Int64>) throws -> [Int64: Origin] {
        guard try db.tableExists("sluice_sync_origin") else { return [:] }
        var found: [Int64: Origin] = [:]
        for row in try db.fetchRows(sql: "SELECT seq, device, space_seq, clock FROM sluice_sync_origin WHERE seq BETWEEN ? AND ?",
                                    arguments: [.integer(sequences.lowerBound), .integer(sequences.upperBound)]) {
            guard case .integer(let seq) = row[0], case .text(let device) = row[1], case .integer(let spaceSeq) = row[2],
                  case .integer(let clock) = row[3] else { continue }
            found[seq] = Origin(device: device, spaceSeq: spaceSeq, clock: HybridClock(rawValue: clock))
        }
        return found
    }
}
