import Dispatch
import Foundation

/// Something the observation center keeps up to date.
protocol StoreObservation: AnyObject, Sendable {
    /// Reads the initial state at the center's snapshot and delivers it.
    func start(_ db: Database)
    /// Applies the changes of one or more commits (rowids by table; nil when
    /// another process committed and anything may have changed) and
    /// delivers the result, unless `silent`.
    func update(_ db: Database, changes: [String: Set<Int64>]?, silent: Bool)
}

/// Runs the store's observations on their own queue and read connections.
///
/// Right after each COMMIT, while the writer still holds off the next one,
/// the center starts a read transaction on a pooled connection: that
/// snapshot is exactly the committed state. The observation queue later
/// applies each commit against its own snapshot, in commit order, so every
/// commit gets its own changeset. When the pool is exhausted (observers far
/// behind), commits wait unpinned and are applied together against a later
/// snapshot: one merged changeset, nothing lost.
final class ObservationCenter: @unchecked Sendable {
    // @unchecked Sendable: `pending`, `version`, `scheduled`, `idle`,
    // `pooled` are guarded by `lock`; `connection`, `observations`, `order`,
    // `starting`, the poll timer are only touched on `queue`.

    struct PendingCommit {
        let version: Int
        /// nil: unknown (another process committed, or the schema changed).
        let changes: [String: Set<Int64>]?
        let silenced: Set<ObjectIdentifier>
        /// A read transaction on the state right after this commit, if one could be pinned.
        let snapshot: Database?
    }

    /// Snapshots pinned at once, at most.
    static let maximumSnapshots = 4
    /// How long a commit waits for a snapshot connection when all are in
    /// use, before it is merged with the next one instead. Bounded, so that
    /// an observer that writes synchronously from the observation queue
    /// cannot deadlock the writer.
    static let snapshotWait: TimeInterval = 1

    let queue = DispatchQueue(label: "sluice.observation")
    private let queueKey = DispatchSpecificKey<Bool>()
    /// Guards the shared state; signalled when a snapshot connection comes back.
    private let lock = NSCondition()
    private var version = 0
    private var pending: [PendingCommit] = []
    private var scheduled = false
    private var idle: [Database] = []
    private var pooled = 0
    private var connection: Database?
    private let openConnection: () throws -> Database
    private var observations: [ObjectIdentifier: StoreObservation] = [:]
    private var order: [ObjectIdentifier] = []
    private var starting: [(ObjectIdentifier, StoreObservation)] = []
    /// Called when the number of observations goes from 0 to 1 or back,
    /// to re-check `isObserving` (calls may arrive out of order, so the
    /// callee reads the current state instead of trusting an argument);
    /// set once, right after init.
    var trackingChanged: @Sendable (Bool) -> Void = { _ in }
    /// For a read-only store, whose every commit comes from elsewhere: poll
    /// this queue's own connection's `data_version` while observing.
    var pollsOwnConnection = false
    private var pollTimer: DispatchSourceTimer?
    private var lastDataVersion: Int64?
    private let count = Mutex(0)

    init(openConnection: @escaping () throws -> Database) {
        self.openConnection = openConnection
        queue.setSpecific(key: queueKey, value: true)
    }

    var isOnQueue: Bool { DispatchQueue.getSpecific(key: queueKey) == true }

    /// Whether anything is observed now.
    var isObserving: Bool { count.withLock { $0 > 0 } }

    // MARK: - Writer side (called on the writer's queue)

    /// Runs COMMIT, then records its changes as one version with a snapshot
    /// of the state it committed.
    func commit(_ commit: () throws -> Void, changes: () -> [String: Set<Int64>]?, silenced: Set<ObjectIdentifier>) throws {
        try commit()
        // Always take the changes, so none carry over into a later commit.
        let changed = changes()
        guard count.withLock({ $0 }) > 0, changed?.isEmpty != true else { return }
        record(changed, silenced: silenced)
    }

    /// Records that another connection committed (or the schema changed).
    func recordExternalCommit() {
        record(nil, silenced: [])
    }

    /// On the writer's queue, so no commit happens meanwhile: pins the
    /// current state and queues the commit.
    private func record(_ changes: [String: Set<Int64>]?, silenced: Set<ObjectIdentifier>) {
        let snapshot = pinSnapshot()
        lock.lock()
        version += 1
        pending.append(PendingCommit(version: version, changes: changes, silenced: silenced, snapshot: snapshot))
        let schedule = !scheduled
        scheduled = true
        lock.unlock()
        if schedule { queue.async { self.pump() } }
    }

    private func pinSnapshot() -> Database? {
        lock.lock()
        var db = idle.popLast()
        if db == nil, pooled < Self.maximumSnapshots {
            pooled += 1
            lock.unlock()
            db = try? openConnection()
            lock.lock()
            if db == nil { pooled -= 1 }
        }
        // All snapshots are in use: the observation queue is behind. Wait for
        // it to hand one back rather than merge commits at once (not on that
        // queue itself, which is the one that hands them back).
        if db == nil, !isOnQueue {
            let deadline = Date().addingTimeInterval(Self.snapshotWait)
            while idle.isEmpty, lock.wait(until: deadline) {}
            db = idle.popLast()
        }
        lock.unlock()
        guard let db else { return nil }
        do {
            // BEGIN + a read pins the snapshot.
            try db.begin(immediate: false)
            _ = try db.fetchRows(sql: "SELECT 1 FROM sqlite_schema LIMIT 1")
            return db
        } catch {
            db.rollback()
            release(db)
            return nil
        }
    }

    private func release(_ db: Database) {
        db.rollback()
        lock.lock()
        idle.append(db)
        lock.signal()
        lock.unlock()
    }

    // MARK: - Observations

    /// Adds an observation; its initial state is read and delivered on the queue.
    func add(_ observation: StoreObservation) -> ObjectIdentifier {
        let id = ObjectIdentifier(observation)
        let first = count.withLock { count in
            count += 1
            return count == 1
        }
        if first { trackingChanged(true) }
        queue.async {
            self.starting.append((id, observation))
            self.pump()
        }
        return id
    }

    /// Removes an observation (on the queue, after any delivery in progress).
    func remove(_ id: ObjectIdentifier) {
        let work: @Sendable () -> Void = {
            let removed = self.observations.removeValue(forKey: id) != nil
            let wasStarting = self.starting.contains { $0.0 == id }
            self.starting.removeAll { $0.0 == id }
            self.order.removeAll { $0 == id }
            guard removed || wasStarting else { return }
            let last = self.count.withLock { count in
                count -= 1
                return count == 0
            }
            if last {
                self.trackingChanged(false)
                self.pollTimer?.cancel()
                self.pollTimer = nil
                self.lastDataVersion = nil
                self.connection = nil
                self.lock.withLock {
                    self.pooled -= self.idle.count
                    self.idle = []
                }
            }
        }
        if isOnQueue { work() } else { queue.async(execute: work) }
    }

    /// Processes everything committed so far, synchronously.
    func drain() {
        if isOnQueue { pump() } else { queue.sync { pump() } }
    }

    // MARK: - The pump (on the queue)

    private func pump() {
        lock.lock()
        let commits = pending
        pending = []
        scheduled = false
        lock.unlock()

        // Commits with their own snapshot are applied one by one; commits
        // without one wait for the next snapshot and go with it.
        var waiting: [PendingCommit] = []
        for commit in commits {
            waiting.append(commit)
            guard let snapshot = commit.snapshot else { continue }
            apply(waiting, on: snapshot)
            waiting = []
            release(snapshot)
        }

        guard !waiting.isEmpty || !starting.isEmpty else { return }
        // The rest (and newcomers) use the queue's own connection, at the latest state.
        let db: Database
        do {
            if let connection {
                db = connection
            } else {
                db = try openConnection()
                connection = db
            }
            try db.begin(immediate: false)
            _ = try db.fetchRows(sql: "SELECT 1 FROM sqlite_schema LIMIT 1")
        } catch {
            connection?.rollback()
            failAll(error)
            return
        }
        defer { db.rollback() }
        if !waiting.isEmpty { apply(waiting, on: db) }
        let newcomers = starting
        starting = []
        for (id, observation) in newcomers {
            observations[id] = observation
            order.append(id)
            observation.start(db)
        }
        if pollsOwnConnection, !newcomers.isEmpty, pollTimer == nil {
            startPolling()
        }
    }

    /// Applies commits to every observation, against a snapshot that
    /// contains them all.
    private func apply(_ commits: [PendingCommit], on db: Database) {
        db.refreshSchemaIfChanged()
        let changes = Self.merge(commits)
        for id in order {
            guard let observation = observations[id] else { continue }
            let silenced = commits.allSatisfy { $0.silenced.contains(id) }
            observation.update(db, changes: changes, silent: silenced)
        }
    }

    private static func merge(_ commits: [PendingCommit]) -> [String: Set<Int64>]? {
        if commits.count == 1 { return commits[0].changes }
        var merged: [String: Set<Int64>] = [:]
        for commit in commits {
            guard let changes = commit.changes else { return nil }
            for (table, rowIDs) in changes { merged[table, default: []].formUnion(rowIDs) }
        }
        return merged
    }

    private func failAll(_ error: Error) {
        let storeError = error as? StoreError ?? StoreError(code: .error, message: "\(error)")
        for observation in observations.values {
            (observation as? FailableObservation)?.fail(storeError)
        }
        for (_, observation) in starting {
            (observation as? FailableObservation)?.fail(storeError)
        }
    }

    /// Stops polling (the store is going away).
    func stopPolling() {
        queue.async { [self] in
            pollTimer?.cancel()
            pollTimer = nil
        }
    }

    /// Read-only stores: every change in `data_version` is a commit by
    /// another connection. Runs on the queue, outside any transaction.
    private func startPolling() {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + Store.externalChangePollInterval, repeating: Store.externalChangePollInterval,
                       leeway: .milliseconds(2))
        timer.setEventHandler { [weak self] in
            guard let self, let connection = self.connection,
                  let version = try? connection.connection.scalarInt(sql: "PRAGMA data_version") else { return }
            defer { self.lastDataVersion = version }
            if let last = self.lastDataVersion, last != version { self.recordExternalCommit() }
        }
        lastDataVersion = try? connection?.connection.scalarInt(sql: "PRAGMA data_version")
        timer.resume()
        pollTimer = timer
    }
}

/// An observation that can report that it cannot run.
protocol FailableObservation {
    func fail(_ error: StoreError)
}
