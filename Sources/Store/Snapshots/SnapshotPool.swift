import Foundation

/// A pooled connection in a read transaction whose snapshot is fixed, and
/// the file's commit counter at that snapshot (nil when a commit landed
/// while it was pinned, three times running).
struct PinnedSnapshot {
    let db: Database
    let commit: UInt32?
    /// The file is in a rollback-journal mode (`ReadPin.transient`).
    var transient = false
}

/// The read connections that observation events pin their snapshots on,
/// and the renewal that lets the WAL restart while snapshots are held.
///
/// Callers that must order their events as their snapshots were taken pin
/// and enqueue under `withLock`; connections come back when the last
/// `ReadPin` of a snapshot goes.
final class SnapshotPool: @unchecked Sendable {
    // @unchecked Sendable: `idle` and `pooled` are guarded by `lock`;
    // `maintenance` is touched only on the observation queue.

    /// Snapshots pinned at once, at most: queued events, and the states
    /// delivered snapshots read their elements from.
    static let maximumSnapshots = 6
    /// How long a commit waits for a snapshot connection when all are in
    /// use, before it is queued without one (merged with the next).
    static let snapshotWait: TimeInterval = 1

    let counter: CommitCounter
    private let openConnection: () throws -> Database
    /// Guards the pool (and what callers do under `withLock`); signalled when a connection comes back.
    private let lock = NSCondition()
    private var idle: [Database] = []
    private var pooled = 0
    /// The connection renewal runs its checkpoints on (observation queue only).
    private var maintenance: Database?

    init(counter: CommitCounter, openConnection: @escaping () throws -> Database) {
        self.counter = counter
        self.openConnection = openConnection
    }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    // MARK: - Connections

    /// A connection for a snapshot: an idle one, a new one while the pool
    /// has room, one handed back within `snapshotWait` when `mayWait`, or
    /// (`beyondPool`) one opened past the pool's size. Nil when none could be had.
    func connection(mayWait: Bool, beyondPool: Bool = false) -> Database? {
        lock.lock()
        if let db = idle.popLast() {
            lock.unlock()
            return db
        }
        if pooled < Self.maximumSnapshots || beyondPool {
            pooled += 1
            lock.unlock()
            if let db = try? openConnection() { return db }
            lock.lock()
            pooled -= 1
        }
        if mayWait {
            let deadline = Date().addingTimeInterval(Self.snapshotWait)
            while idle.isEmpty, lock.wait(until: deadline) {}
        }
        let db = idle.popLast()
        lock.unlock()
        return db
    }

    /// Starts a read transaction on `db` (BEGIN and a read fix the
    /// snapshot), reading the commit counter before and after: when they
    /// agree, the snapshot is at that commit. Nil when it fails; then `db`
    /// is given back. Call with the lock held.
    func pin(_ db: Database?) -> PinnedSnapshot? {
        guard let db else { return nil }
        for attempt in 0..<3 {
            let before = counter.read()
            do {
                try db.begin(immediate: false)
                _ = try db.fetchRows(sql: "SELECT 1 FROM sqlite_schema LIMIT 1")
            } catch {
                db.rollback()
                giveBack(db)
                return nil
            }
            let after = counter.read()
            if before == after { return PinnedSnapshot(db: db, commit: before, transient: counter.isRollbackJournal) }
            if attempt == 2 { break }
            db.rollback()    // a commit landed meanwhile: again, to know which snapshot this is
        }
        return PinnedSnapshot(db: db, commit: nil, transient: counter.isRollbackJournal)
    }

    /// Returns a pooled connection (call with the lock held).
    ///
    /// Past `maximumSnapshots` idle connections (the queue opens more when
    /// it finds none free), it is closed instead, with its page cache. (The
    /// idle ones keep theirs: emptying it on every return made each
    /// single-row change read its pages from the file again, 381–494 →
    /// 738 µs at a million rows.)
    func giveBack(_ db: Database) {
        if idle.count >= Self.maximumSnapshots {
            pooled -= 1
        } else {
            idle.append(db)
        }
        lock.signal()
    }

    /// The snapshot, as a pin that gives its connection back when the last
    /// holder lets go.
    func makePin(_ snapshot: PinnedSnapshot) -> ReadPin {
        ReadPin(snapshot.db, commit: snapshot.commit, transient: snapshot.transient, counter: counter) { [weak self] db in
            guard let self else { return }
            self.withLock { self.giveBack(db) }
        }
    }

    /// Closes the idle connections and the maintenance one (nothing is observed any more).
    func closeIdle() {
        maintenance = nil
        withLock {
            pooled -= idle.count
            idle = []
        }
    }

    // MARK: - Renewal

    enum Renewal {
        /// Nothing to renew: the WAL is empty.
        case unneeded
        /// It could not be done now (a reader, a commit, or an error in the way).
        case failed
        /// A new pin at the same state, holding no WAL frames.
        case renewed(ReadPin)
        /// A new pin at the same state, taken while another connection's
        /// checkpoint runs: it holds no frames if that one copied them all.
        case repinned(ReadPin)
        /// A new pin at the same state, taken without a checkpoint of this
        /// queue's own (`checkpointing` false): it holds no frames if a
        /// checkpoint by anyone copied them all. `duringCheckpoint`: a
        /// checkpoint was copying frames while it was taken, so it may hold
        /// some until it is taken again after that checkpoint.
        case moved(ReadPin, duringCheckpoint: Bool)
    }

    /// A pin at the same state as the latest event's (commit `applied`)
    /// that holds no WAL frames, so writers can restart the WAL (on the
    /// observation queue).
    ///
    /// Snapshots read through the read transaction of the last event, and a
    /// reader holding WAL frames keeps writers from restarting the WAL, so
    /// with a snapshot always held it would grow with every commit. Here,
    /// when a passive checkpoint copies every frame to the database (which
    /// proves the latest pin is at the newest commit: a checkpoint cannot go past
    /// a reader's frames), a new read transaction is started (it reads the
    /// database file only), and unless a commit came in between (the commit
    /// counter and the WAL's size say) it replaces the latest pin. When
    /// another connection's checkpoint is running (it may be waiting for
    /// this queue's readers to let go), the pin is taken again all the same.
    ///
    /// With `checkpointing` false, no checkpoint is run (another connection's
    /// TRUNCATE or RESTART that starts while this queue's own checkpoint runs
    /// fails at once: SQLite never waits for the checkpoint lock); the pin is
    /// only taken again at the same state.
    func renew(at applied: UInt32?, checkpointing: Bool = true) -> Renewal {
        guard checkpointing else {
            let version = counter.read()
            guard version != nil, version == applied else { return .failed }
            let copying = counter.checkpointUnderWay()
            guard let new = pinAgain(at: version) else { return .failed }
            return .moved(new, duringCheckpoint: copying || counter.checkpointUnderWay())
        }
        guard let checkpointer = maintenanceConnection() else { return .failed }
        func checkpoint() -> (log: Int64, copied: Int64)?? {
            guard let row = try? checkpointer.fetchRows(sql: "PRAGMA wal_checkpoint(PASSIVE)").first, row.values.count == 3,
                  case .integer(let busy) = row.values[0] else { return nil }
            guard busy == 0, case .integer(let log) = row.values[1], case .integer(let copied) = row.values[2], log >= 0 else {
                return .some(nil)
            }
            return (log, copied)
        }
        let version = counter.read()
        guard version != nil, version == applied, let result = checkpoint() else { return .failed }
        guard let before = result else {
            return pinAgain(at: version).map(Renewal.repinned) ?? .failed
        }
        guard before.log > 0 else { return .unneeded }
        guard before.copied == before.log else { return .failed }
        guard let new = pinAgain(at: version) else { return .failed }
        guard let after = checkpoint(), let after, after.log == before.log, counter.read() == version else { return .failed }
        return .renewed(new)
    }

    /// A new pin at commit `version` (nil when a commit landed since, or
    /// none could be pinned). Started after every frame was copied to the
    /// database, it reads the database file only.
    func pinAgain(at version: UInt32?) -> ReadPin? {
        guard let version else { return nil }
        let db = connection(mayWait: false, beyondPool: true)
        guard let pinned = withLock({ pin(db) }) else { return nil }
        let new = makePin(pinned)
        return pinned.commit == version ? new : nil
    }

    /// Restarts the WAL with a RESTART checkpoint, waiting at most `budget`
    /// (on the observation queue).
    ///
    /// The checkpoint holds off writers while it runs (they wait, as for any
    /// writer), copies every frame once every reader is at the newest
    /// commit, then waits until no reader holds WAL frames, so that the
    /// next writer starts the WAL again from its beginning. While it waits,
    /// `whileWaiting` is called: the observation queue brings its
    /// observations to the newest commit and moves them to a pin that holds
    /// no frames (other processes' stores do the same when they fall idle).
    ///
    /// - Returns: whether the WAL was restarted.
    func restart(budget: TimeInterval, whileWaiting: () -> Void) -> Bool {
        guard let checkpointer = maintenanceConnection() else { return false }
        let deadline = Date().addingTimeInterval(budget)
        return withoutActuallyEscaping(whileWaiting) { whileWaiting in
            // A writer committing back to back leaves the lock free for
            // microseconds between its transactions: while commits still
            // land (the checkpoint does not hold off writers yet), only try
            // again, often; once the counter stands still, do the queue's work.
            var last = counter.read()
            var still = 0
            checkpointer.connection.busyOverride = { _ in
                guard Date() < deadline else { return false }
                let now = self.counter.read()
                if now != last {
                    last = now
                    still = 0
                } else {
                    still += 1
                    if still % 8 == 3 { whileWaiting() }
                }
                usleep(20)
                return true
            }
            defer { checkpointer.connection.busyOverride = nil }
            guard let row = try? checkpointer.fetchRows(sql: "PRAGMA wal_checkpoint(RESTART)").first, row.values.count == 3,
                  case .integer(let busy) = row.values[0] else { return false }
            return busy == 0
        }
    }

    private func maintenanceConnection() -> Database? {
        if maintenance == nil { maintenance = try? openConnection() }
        return maintenance
    }
}
