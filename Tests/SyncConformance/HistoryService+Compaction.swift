import Foundation
import SluiceSyncPolicy

/// Compaction in memory, by ``HistoryPruning``'s rules as the service applies them in
/// PostgreSQL: the history pruned up to the lowest position of the devices seen within the
/// horizon, each device's last transaction kept. (Attachments' bytes are not compacted here:
/// the Server package tests that.)
extension HistoryService {
    /// Records where `device`'s rows are (inside `lock`).
    func saw(_ device: String, at since: Int64) {
        let now = Date()
        positions[device] = positions[device]?.moved(to: since, at: now) ?? HistoryPruning.Position(pulled: since, seen: now)
    }

    public func compact(horizonDays: Int) -> Int64 {
        lock.withLock {
            pruned = HistoryPruning.prunedThrough(current: pruned, head: headSeq, positions: positions.values,
                                                  horizon: .seconds(horizonDays * 86_400), now: Date())
            var lastLocal: [String: Int64] = [:]
            for transaction in transactions { lastLocal[transaction.device] = max(lastLocal[transaction.device] ?? transaction.local, transaction.local) }
            let through = pruned
            transactions.removeAll { HistoryPruning.goes(seq: $0.seq ?? 0, device: $0.device, local: $0.local, through: through, lastLocal: lastLocal) }
            return pruned
        }
    }
}
