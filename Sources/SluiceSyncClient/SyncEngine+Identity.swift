import Foundation
import SluiceSyncProtocol
import Sluice

/// Device identity: a new id for a copy (or when another history shows up under the id),
/// and the stamps that tell this device's own pulled transactions from another's.
extension SyncEngine {
    /// Gives this store a new device id: it is a copy of another store (its file changed),
    /// or the service or a pulled transaction showed another history under its id. What it
    /// has not pushed is pushed under the new id; every transaction of the old id it pulls
    /// from now on is another device's. The ids it had are kept under `ancestors`.
    func reidentify(_ state: inout State, _ db: Database) throws {
        let old = state.device
        state.device = Self.newDeviceID()
        try save(state, db)
        try DeviceStateTable(db).append(old, to: .ancestors)
    }

    /// Whether a pulled transaction under this device's id is one this device sent: its
    /// number and the clock it was sent with match a recorded stamp.
    func isOwn(_ transaction: SyncTransaction, _ db: Database) throws -> Bool {
        try StampLedger(db).clock(of: transaction.local) == (transaction.sent ?? transaction.clock)
    }

    /// The recorded stamp of transaction (or upload part) `seq`, or a new one at `date`,
    /// recorded before it is sent: a retried push carries the same clock.
    func stamp(_ seq: Int64, at date: Date, state: inout State, _ db: Database) throws -> HybridClock {
        let ledger = StampLedger(db)
        if let clock = try ledger.clock(of: seq) { return clock }
        let clock = state.stamp(at: date)
        try ledger.record(seq, clock)
        return clock
    }

    /// Marks the stamps of `seqs` (not marked yet) as taken by the service at `head`, and
    /// drops those the cursor has passed (their transactions are never pulled again).
    /// Upload parts have negative numbers, log transactions positive ones.
    func acknowledgeStamps(_ seqs: ClosedRange<Int64>, head: Int64, cursor: Int64, _ db: Database) throws {
        try StampLedger(db).acknowledge(seqs, head: head, cursor: cursor)
    }
}
