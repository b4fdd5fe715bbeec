import Foundation

/// A read transaction held open at the state of one observation event,
/// shared by everything that reads at that state: the observations while
/// the event is applied, then the snapshots delivered for it, which read
/// their elements on access. When the last holder lets go, the transaction
/// ends and the connection goes back to the observation center's pool.
///
/// The connection is used by one thread at a time: the observation queue
/// holds the lock while it applies the event, and a snapshot reading an
/// element takes it for the read. The lock is recursive, so code on the
/// queue that reads a snapshot of the event it is applying can.
final class ReadPin: @unchecked Sendable {
    // @unchecked Sendable: `db` is only used with `lock` held.
    private let lock = NSRecursiveLock()
    private let db: Database
    private let release: @Sendable (Database) -> Void
    /// The file's commit counter at this snapshot (`CommitCounter`), when known.
    let commit: UInt32?

    /// - Parameters:
    ///   - db: a connection in a read transaction that has read (so its snapshot is fixed).
    ///   - commit: the commit counter at that snapshot, when known.
    ///   - release: called with `db` once its transaction has ended.
    init(_ db: Database, commit: UInt32? = nil, release: @escaping @Sendable (Database) -> Void) {
        self.db = db
        self.commit = commit
        self.release = release
    }

    deinit {
        db.rollback()
        release(db)
    }

    /// Runs `body` with the pinned connection, alone.
    func withDatabase<T>(_ body: (Database) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(db)
    }
}
