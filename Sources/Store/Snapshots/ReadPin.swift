import Foundation

/// A read transaction held open at the state of one observation event,
/// shared by everything that reads at that state: the observations while
/// the event is applied, then the snapshots delivered for it, which read
/// their elements on access. When the last holder lets go, the transaction
/// ends and the connection goes back to the observation center's pool.
///
/// On a file in a rollback-journal mode a read transaction holds a shared
/// lock that keeps every writer from committing, so there the pin is
/// `transient`: its transaction ends once its event is applied
/// (`endEvent()`), observations hold their elements themselves, and a read
/// after that begins a transaction again, refused when a commit landed
/// since (the state is gone from the file).
///
/// The connection is used by one thread at a time: the observation queue
/// holds the lock while it applies the event, and a snapshot reading an
/// element takes it for the read. The lock is recursive, so code on the
/// queue that reads a snapshot of the event it is applying can.
final class ReadPin: @unchecked Sendable {
    // @unchecked Sendable: `db` and `suspended` are only used with `lock` held.
    private let lock = NSRecursiveLock()
    private let db: Database
    private let release: @Sendable (Database) -> Void
    private let counter: CommitCounter?
    /// The file's commit counter at this snapshot (`CommitCounter`), when known.
    let commit: UInt32?
    /// Whether the file was in a rollback-journal mode when this was pinned.
    let transient: Bool
    /// The transaction ended after the event (a transient pin).
    private var suspended = false

    /// - Parameters:
    ///   - db: a connection in a read transaction that has read (so its snapshot is fixed).
    ///   - commit: the commit counter at that snapshot, when known.
    ///   - transient: the file is in a rollback-journal mode (`counter` reads it).
    ///   - release: called with `db` once its transaction has ended.
    init(_ db: Database, commit: UInt32? = nil, transient: Bool = false, counter: CommitCounter? = nil,
         release: @escaping @Sendable (Database) -> Void) {
        self.db = db
        self.commit = commit
        self.transient = transient
        self.counter = counter
        self.release = release
    }

    deinit {
        db.rollback()
        release(db)
    }

    /// Runs `body` with the pinned connection, alone, during its event (or
    /// on a pin that is not transient).
    func withDatabase<T>(_ body: (Database) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(db)
    }

    /// Runs `body` with the pinned connection at this pin's state, alone:
    /// a transient pin whose event is over begins a read transaction again
    /// for the read, and ends it after.
    ///
    /// - Throws: `StoreError` (`.error`) when a commit landed since this
    ///   transient pin's state (a rollback-journal file keeps no older state).
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        guard suspended else { return try body(db) }
        try db.begin(immediate: false)
        defer { db.rollback() }
        _ = try db.fetchRows(sql: "SELECT 1 FROM sqlite_schema LIMIT 1")
        guard let commit, counter?.read() == commit else {
            throw StoreError(code: .error, message: "the snapshot's commit is no longer in \(db.connection.path): "
                             + "a file in a rollback-journal mode keeps only its newest state")
        }
        return try body(db)
    }

    /// Ends the read transaction of a transient pin once its event is
    /// applied, so that it holds no lock between reads.
    func endEvent() {
        guard transient else { return }
        lock.lock()
        defer { lock.unlock() }
        guard !suspended else { return }
        db.rollback()
        suspended = true
    }
}
