import Foundation
import SluiceSyncProtocol

/// The service's rules for compacting a space's history, over whatever stores it:
///
/// - each pull and rows request records the device's position (the `since` it asked from)
///   and when it was seen;
/// - compaction prunes the history up to the lowest position of the devices seen within
///   the horizon (the head, when none was), never back, and keeps each device's last
///   transaction (a retried push and a copied store are still recognized by it);
/// - attachments' bytes that no current row or kept transaction names, untouched by any
///   upload or push within the horizon, are deleted;
/// - a pull from below the pruned point is refused `compacted` (410): the device takes a
///   snapshot of the rows and pulls from its head, keeping its unpushed edits; a push based
///   below it is sent back `behind` (``PushDecision``).
///
/// The PostgreSQL service applies these rules in SQL (`SyncStorage.compact`), the in-memory
/// one with these functions; the conformance scenarios hold both to the same outcomes.
public enum HistoryPruning {
    /// Where a device's rows are, and when it was last seen.
    public struct Position: Sendable, Equatable {
        /// The `since` of its last pull or rows request (the highest it asked from).
        public var pulled: Int64
        /// When it asked.
        public var seen: Date

        public init(pulled: Int64, seen: Date) {
            self.pulled = pulled
            self.seen = seen
        }

        /// The position after another request from `since` at `now`.
        public func moved(to since: Int64, at now: Date) -> Position { Position(pulled: max(pulled, since), seen: now) }
    }

    /// How far the history is pruned after a compaction at `now`: up to the lowest position
    /// of the devices seen within `horizon` (the head when none was), never below `current`.
    public static func prunedThrough(current: Int64, head: Int64, positions: some Sequence<Position>, horizon: Duration, now: Date) -> Int64 {
        let active = positions.filter { $0.seen > now.addingTimeInterval(-seconds(horizon)) }.map(\.pulled).min()
        return max(current, min(head, active ?? head))
    }

    /// Whether a transaction at `seq` of `device` numbered `local` goes when the history is
    /// pruned through `through`, given the largest number each device pushed under.
    public static func goes(seq: Int64, device: String, local: Int64, through: Int64, lastLocal: [String: Int64]) -> Bool {
        seq <= through && local < (lastLocal[device] ?? local)
    }

    /// Whether an attachment's bytes go in a compaction at `now`: no current row nor kept
    /// transaction names it (`named`), and no upload or push touched it within `horizon`.
    public static func attachmentGoes(named: Bool, touched: Date, horizon: Duration, now: Date) -> Bool {
        !named && touched < now.addingTimeInterval(-seconds(horizon))
    }

    /// A horizon in seconds (as the service's SQL takes it).
    public static func seconds(_ horizon: Duration) -> Double {
        Double(horizon.components.seconds) + Double(horizon.components.attoseconds) / 1e18
    }

    /// - Throws: `compacted` when a pull from `since` starts below `pruned`.
    public static func checkPull(since: Int64, pruned: Int64) throws(SyncErrorBody) {
        guard since >= pruned else {
            throw SyncErrorBody(.compacted, message: "the history is pruned through \(pruned) and this pull starts at \(since): take a snapshot of the rows (POST /v1/rows with every table), then pull from its head")
        }
    }
}
