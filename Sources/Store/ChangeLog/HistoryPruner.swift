import Foundation

/// How long the change log keeps transactions.
public enum HistoryRetention: Sendable, Equatable {
    /// Keep everything.
    case forever
    /// Keep the newest `n` transactions.
    case transactions(Int)
    /// Keep transactions younger than this many seconds.
    case age(TimeInterval)
}

/// Removes old transactions from the change log, a bounded batch at a time,
/// in a short transaction of its own, never past what a registered consumer
/// has not acknowledged.
struct HistoryPruner {
    /// Transactions removed at most per call, so a writer waits little.
    static let batch: Int64 = 1_000

    let retention: HistoryRetention

    /// Prunes; returns how many transactions were removed.
    func prune(_ db: Database) throws -> Int {
        guard retention != .forever, try ChangeLog.exists(db) else { return 0 }
        return try db.inTransaction { try pruneInTransaction(db) }
    }

    private func pruneInTransaction(_ db: Database) throws -> Int {
        guard let position = ChangeLog.position(db) else { return 0 }
        var target: Int64
        switch retention {
        case .forever: return 0
        case .transactions(let count):
            target = position.sequence - Int64(max(0, count))
        case .age(let seconds):
            let cutoff = LogWriter.now() - Int64(seconds * 1000)
            let young = try db.connection.scalarInt(sql: "SELECT seq FROM sluice_transaction WHERE at >= \(cutoff) ORDER BY seq LIMIT 1")
            target = (young ?? position.sequence + 1) - 1
        }
        if let acknowledged = try db.connection.scalarInt(sql: "SELECT min(acknowledged) FROM sluice_consumer") {
            target = min(target, acknowledged)
        }
        target = min(target, position.prunedThrough + Self.batch)
        guard target > position.prunedThrough else { return 0 }
        // The changes before the first transaction kept (ids increase with transactions).
        try db.execute(sql: """
            DELETE FROM sluice_change WHERE id < coalesce(
                (SELECT first_change FROM sluice_transaction WHERE seq > ?1 ORDER BY seq LIMIT 1),
                (SELECT max(id) + 1 FROM sluice_change))
            """, arguments: [.integer(target)])
        try db.execute(sql: "DELETE FROM sluice_transaction WHERE seq <= ?", arguments: [.integer(target)])
        let removed = db.changesCount
        try db.execute(sql: "UPDATE sluice_log_state SET value = ? WHERE name = 'pruned_through'", arguments: [.integer(target)])
        return removed
    }
}
