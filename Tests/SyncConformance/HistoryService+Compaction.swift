import Foundation
import SluiceSyncPolicy

/// Compaction in memory, by ``HistoryPruning``'s rules as the service applies them in
/// PostgreSQL: the history pruned up to the lowest position of the devices seen within the
/// horizon, each device's last transaction kept, attachments nothing names deleted.
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
            // The bytes nothing names any more.
            let values = rows.values.filter { !$0.deleted }.flatMap(\.values.values) + transactions.flatMap { $0.changes.flatMap { ($0.values ?? [:]).values } }
            let named = Set(values.compactMap { value -> String? in if case .attachment(let attachment) = value { attachment.hash } else { nil } })
            let now = Date()
            attachments = attachments.filter { hash, stored in
                !HistoryPruning.attachmentGoes(named: named.contains(hash), touched: stored.touched, horizon: .seconds(horizonDays * 86_400), now: now)
            }
            return pruned
        }
    }
}
