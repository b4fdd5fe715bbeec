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

/// Runs the store's observations on their own queue and read connection.
///
/// The writer records each commit's changed rowids with a version number,
/// under `lock`, in the same critical section as COMMIT. The observation
/// queue starts a read transaction under the same lock, so it knows exactly
/// which versions its snapshot contains: it applies those commits, in order,
/// and leaves later ones for the next round. If it falls behind, the commits
/// it finds waiting are applied together (one merged changeset).
final class ObservationCenter: @unchecked Sendable {
    // @unchecked Sendable: `pending`, `version`, `scheduled` are guarded by
    // `lock`; `connection`, `observations`, `starting` are only touched on `queue`.

    struct PendingCommit {
        let version: Int
        /// nil: another process committed.
        let changes: [String: Set<Int64>]?
        let silenced: Set<ObjectIdentifier>
    }

    let queue = DispatchQueue(label: "sluice.observation")
    private let queueKey = DispatchSpecificKey<Bool>()
    private let lock = NSLock()
    private var version = 0
    private var pending: [PendingCommit] = []
    private var scheduled = false
    private var connection: Database?
    private let openConnection: () throws -> Database
    private var observations: [ObjectIdentifier: StoreObservation] = [:]
    private var order: [ObjectIdentifier] = []
    private var starting: [(ObjectIdentifier, StoreObservation)] = []
    /// Called when the number of observations goes from 0 to 1 or back;
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

    // MARK: - Writer side (called on the writer's queue)

    /// Runs COMMIT and records its changes as one version, atomically with
    /// respect to the observation queue starting a snapshot.
    func commit(_ commit: () throws -> Void, changes: () -> [String: Set<Int64>]?, silenced: Set<ObjectIdentifier>) throws {
        lock.lock()
        do {
            try commit()
        } catch {
            lock.unlock()
            throw error
        }
        let changed = changes()
        if changed?.isEmpty != true, count.withLock({ $0 }) > 0 {
            version += 1
            pending.append(PendingCommit(version: version, changes: changed, silenced: silenced))
        }
        let schedule = !pending.isEmpty && !scheduled
        if schedule { scheduled = true }
        lock.unlock()
        if schedule { queue.async { self.pump() } }
    }

    /// Records that another connection committed.
    func recordExternalCommit() {
        lock.lock()
        version += 1
        pending.append(PendingCommit(version: version, changes: nil, silenced: []))
        let schedule = !scheduled
        scheduled = true
        lock.unlock()
        if schedule { queue.async { self.pump() } }
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
        let db: Database
        do {
            if let connection {
                db = connection
            } else {
                db = try openConnection()
                connection = db
            }
        } catch {
            lock.lock(); scheduled = false; lock.unlock()
            failAll(error)
            return
        }
        lock.lock()
        let commits: [PendingCommit]
        do {
            // BEGIN + a read pins the snapshot while no commit can happen.
            try db.begin(immediate: false)
            _ = try db.fetchRows(sql: "SELECT 1 FROM sqlite_schema LIMIT 1")
        } catch {
            scheduled = false
            lock.unlock()
            db.rollback()
            failAll(error)
            return
        }
        commits = pending
        pending = []
        scheduled = false
        lock.unlock()
        defer { db.rollback() }
        db.refreshSchemaIfChanged()

        if !commits.isEmpty {
            for id in order {
                guard let observation = observations[id] else { continue }
                let silenced = commits.allSatisfy { $0.silenced.contains(id) }
                observation.update(db, changes: Self.merge(commits), silent: silenced)
            }
        }
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
}

/// An observation that can report that it cannot run.
protocol FailableObservation {
    func fail(_ error: StoreError)
}
