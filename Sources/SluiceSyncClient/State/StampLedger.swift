import SluiceSyncProtocol
import Sluice

/// `sluice_sync_stamp`: the clock of each local transaction (and upload part, numbered
/// below zero) sent or to send, kept until the cursor passes the head the service answered
/// with (`acked`): a pulled transaction under this device's id is its own only when number
/// and clock match one of these. The only code that reads or writes the table.
struct StampLedger {
    static let name = "sluice_sync_stamp"

    let db: Database

    init(_ db: Database) { self.db = db }

    /// The clock transaction (or upload part) `seq` was stamped with.
    func clock(of seq: Int64) throws -> HybridClock? {
        guard case .integer(let clock)? = try db.fetchRows(sql: "SELECT clock FROM sluice_sync_stamp WHERE seq = ?", arguments: [.integer(seq)]).first?[0]
        else { return nil }
        return HybridClock(rawValue: clock)
    }

    /// The stamps of the transactions after `seq`.
    func clocks(after seq: Int64) throws -> [Int64: HybridClock] {
        var stamps: [Int64: HybridClock] = [:]
        for row in try db.fetchRows(sql: "SELECT seq, clock FROM sluice_sync_stamp WHERE seq > ?", arguments: [.integer(seq)]) {
            if case .integer(let seq)? = row["seq"], case .integer(let clock)? = row["clock"] { stamps[seq] = HybridClock(rawValue: clock) }
        }
        return stamps
    }

    func record(_ seq: Int64, _ clock: HybridClock) throws {
        try db.execute(sql: "INSERT INTO sluice_sync_stamp (seq, clock) VALUES (?, ?)", arguments: [.integer(seq), .integer(clock.rawValue)])
    }

    /// Marks the stamps of `seqs` (not marked yet) as taken by the service at `head`, and
    /// drops those the cursor has passed (their transactions are never pulled again).
    func acknowledge(_ seqs: ClosedRange<Int64>, head: Int64, cursor: Int64) throws {
        try db.execute(sql: "UPDATE sluice_sync_stamp SET acked = ? WHERE seq BETWEEN ? AND ? AND acked IS NULL",
                       arguments: [.integer(head), .integer(seqs.lowerBound), .integer(seqs.upperBound)])
        try db.execute(sql: "DELETE FROM sluice_sync_stamp WHERE acked <= ?", arguments: [.integer(cursor)])
    }
}
