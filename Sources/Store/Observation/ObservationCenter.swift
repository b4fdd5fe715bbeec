import Dispatch
import Foundation

/// Something the observation center keeps up to date.
protocol StoreObservation: AnyObject, Sendable {
    /// Reads the initial state at the center's snapshot and delivers it.
    /// `pin` is the read transaction `db` is in, for snapshots to read from later.
    func start(_ db: Database, pin: ReadPin)
    /// Applies the changes of one or more commits against a snapshot that
    /// holds them all, and delivers the result unless `silent`.
    func update(_ db: Database, pin: ReadPin, changes: ChangedRows, silent: Bool)
    /// Reads what was read through `old` through `new` from now on: both
    /// are read transactions at the same state.
    func repin(from old: ReadPin, to new: ReadPin)
}

extension StoreObservation {
    func repin(from old: ReadPin, to new: ReadPin) {}
}

/// Runs the store's observations on their own queue and read connections.
///
/// Every event observers must see (one of our commits, a commit noticed
/// from another connection, an observation starting) is *pinned*: a read
/// transaction is started on a pooled connection, and the event is queued
/// with it, both under one lock. So events are queued in the order their
/// snapshots were taken, and each snapshot holds at least what the ones
/// before it hold: observations only ever move forward, through states that
/// commits produced. Right after our COMMIT, while the writer holds off the
/// next one, the snapshot is exactly that commit unless another connection
/// committed in between; `record` checks for that and then says "unknown",
/// so the changeset covers both commits.
///
/// When all snapshot connections are in use (observers far behind), a
/// commit waits for one, up to `snapshotWait`; past that it is queued
/// without a snapshot and applied, merged, with the next event that has one.
final class ObservationCenter: @unchecked Sendable {
    // @unchecked Sendable: `pending`, `scheduled`, `idle`, `pooled` are
    // guarded by `lock`; `connection`, `observations`, `order`, the watcher
    // are only touched on `queue`.

    private enum Event {
        case commit(ChangedRows, silenced: Set<ObjectIdentifier>)
        /// An observation to start at this event's snapshot.
        case start(ObjectIdentifier, StoreObservation)
        /// An observation whose state was read elsewhere at this point of
        /// the sequence: it takes part in every later event.
        case join(ObjectIdentifier, StoreObservation)
    }

    private struct Pending {
        var event: Event
        /// A read transaction on the state right after this event, if one could be pinned.
        var snapshot: Database?
    }

    /// Snapshots pinned at once, at most: queued events, and the states
    /// delivered snapshots read their elements from.
    static let maximumSnapshots = 6
    /// How long a commit waits for a snapshot connection when all are in
    /// use, before it is queued without one (merged with the next).
    static let snapshotWait: TimeInterval = 1

    let queue = DispatchQueue(label: "sluice.observation")
    private let queueKey = DispatchSpecificKey<Bool>()
    /// Guards the shared state; signalled when a snapshot connection comes back.
    private let lock = NSCondition()
    private var pending: [Pending] = []
    private var scheduled = false
    private var idle: [Database] = []
    private var pooled = 0
    /// The queue's own connection: the watcher's.
    private var connection: Database?
    private let openConnection: () throws -> Database
    private var observations: [ObjectIdentifier: StoreObservation] = [:]
    private var order: [ObjectIdentifier] = []
    /// Called when the number of observations goes from 0 to 1 or back,
    /// to re-check `isObserving` (calls may arrive out of order, so the
    /// callee reads the current state instead of trusting an argument);
    /// set once, right after init.
    var trackingChanged: @Sendable () -> Void = {}
    /// For a read-only store, whose every commit comes from elsewhere:
    /// watches a connection of this queue for other connections' commits.
    var watchesForCommits = false
    private var watcher: CommitWatcher?
    private let count = Mutex(0)
    /// Where the change log stood at the last snapshot observations were
    /// brought to (queue only): other connections' commits after it are
    /// read from the log.
    private var logPosition: ChangeLog.Position?
    /// The pin of the last event applied (queue only), and how many events
    /// were applied since it was last renewed to let the WAL restart.
    private weak var latestPin: ReadPin?
    /// Starts due: the first events often follow a bulk write, whose long
    /// WAL makes every later commit checkpoint until it restarts.
    private var eventsSinceRenewal = ObservationCenter.renewalInterval - 1
    /// Events between attempts to renew the latest pin (each attempt runs
    /// two passive checkpoints: at every 16th event they doubled a
    /// single-row change's latency at a million rows); 16 more after an
    /// attempt that could not renew it.
    static let renewalInterval = 256
    static let renewalRetry = 16

    init(openConnection: @escaping () throws -> Database) {
        self.openConnection = openConnection
        queue.setSpecific(key: queueKey, value: true)
    }

    var isOnQueue: Bool { DispatchQueue.getSpecific(key: queueKey) == true }

    /// Whether anything is observed now.
    var isObserving: Bool { count.withLock { $0 > 0 } }

    // MARK: - Events

    /// Queues a commit with a snapshot of the state it committed. Called
    /// right after COMMIT, before anything else can commit through this
    /// store. `raced` runs once the snapshot is pinned and says whether
    /// another connection may have committed since our COMMIT (then the
    /// snapshot may hold that commit too, and the changes are unknown).
    func record(_ changes: ChangedRows, silenced: Set<ObjectIdentifier>, raced: () -> Bool = { false }) {
        guard isObserving, !changes.isEmpty else { return }
        let db = snapshotConnection()
        lock.lock()
        var event = Pending(event: .commit(changes, silenced: silenced), snapshot: pin(db))
        if event.snapshot == nil, let db { giveBack(db) }
        var raceFound = false
        if raced() {
            // The snapshot holds our commit and perhaps the other one: the
            // changeset covers both. Queue the other commit too, in case it
            // landed after the snapshot was taken.
            var unknown = ChangedRows.external
            unknown.formUnion(changes)
            event.event = .commit(unknown, silenced: [])
            raceFound = true
        }
        pending.append(event)
        let schedule = !scheduled
        scheduled = true
        lock.unlock()
        if raceFound { record(.external, silenced: []) }
        if schedule { queue.async { self.pump() } }
    }

    /// A connection for a snapshot: an idle one, a new one while the pool
    /// has room, or one handed back within `snapshotWait` (not on the queue,
    /// which is what hands them back). Nil when none could be had.
    private func snapshotConnection() -> Database? {
        lock.lock()
        if let db = idle.popLast() {
            lock.unlock()
            return db
        }
        if pooled < Self.maximumSnapshots {
            pooled += 1
            lock.unlock()
            if let db = try? openConnection() { return db }
            lock.lock()
            pooled -= 1
        }
        if !isOnQueue {
            let deadline = Date().addingTimeInterval(Self.snapshotWait)
            while idle.isEmpty, lock.wait(until: deadline) {}
        }
        let db = idle.popLast()
        lock.unlock()
        return db
    }

    /// Starts a read transaction (BEGIN + a read pins the snapshot); nil on failure.
    private func pin(_ db: Database?) -> Database? {
        guard let db else { return nil }
        do {
            try db.begin(immediate: false)
            _ = try db.fetchRows(sql: "SELECT 1 FROM sqlite_schema LIMIT 1")
            return db
        } catch {
            db.rollback()
            return nil
        }
    }

    /// Returns a pooled connection (the caller holds the lock).
    ///
    /// Past `maximumSnapshots` idle connections (the queue opens more when
    /// it finds none free), it is closed instead, with its page cache. (The
    /// idle ones keep theirs: emptying it on every return made each
    /// single-row change read its pages from the file again, 381–494 →
    /// 738 µs at a million rows.)
    private func giveBack(_ db: Database) {
        if idle.count >= Self.maximumSnapshots {
            pooled -= 1
        } else {
            idle.append(db)
        }
        lock.signal()
    }

    /// The event's snapshot, as a pin that gives its connection back when
    /// the last snapshot reading from it is gone.
    private func makePin(_ db: Database) -> ReadPin {
        ReadPin(db) { [weak self] db in
            guard let self else { return }
            self.lock.lock()
            self.giveBack(db)
            self.lock.unlock()
        }
    }

    // MARK: - Observations

    /// Adds an observation; its initial state is read and delivered on the queue.
    func add(_ observation: StoreObservation) {
        let id = ObjectIdentifier(observation)
        becameObserved()
        queue.async {
            self.enqueuePinned(.start(id, observation))
            self.pump()
        }
    }

    /// Adds an observation whose initial state the caller reads now, on
    /// `db` (a read transaction the caller then keeps open while reading):
    /// pins `db`'s snapshot at this point of the event sequence.
    ///
    /// - Returns: the pinned snapshot, for the caller to read the initial
    ///   state on (its snapshots read their elements through it later).
    func join(_ observation: StoreObservation) throws -> ReadPin {
        becameObserved()
        let db = snapshotConnection()
        lock.lock()
        let pinned = pin(db)
        if pinned != nil {
            pending.append(Pending(event: .join(ObjectIdentifier(observation), observation), snapshot: nil))
        } else if let db {
            giveBack(db)
        }
        lock.unlock()
        guard let pinned else {
            becameUnobserved()
            throw StoreError(code: .cannotOpen, message: "cannot start a read transaction for observing")
        }
        return makePin(pinned)
    }

    private func becameObserved() {
        let first = count.withLock { count in
            count += 1
            return count == 1
        }
        if first { trackingChanged() }
    }

    /// One observation fewer; returns whether it was the last.
    @discardableResult
    private func becameUnobserved() -> Bool {
        let last = count.withLock { count in
            count -= 1
            return count == 0
        }
        if last { trackingChanged() }
        return last
    }

    /// On the queue: pins a connection for an event, opening one beyond
    /// the pool's size when none is free (the queue cannot wait for one).
    private func enqueuePinned(_ event: Event) {
        var db = snapshotConnection()
        if db == nil, let opened = try? openConnection() {
            db = opened
            lock.withLock { pooled += 1 }
        }
        lock.lock()
        let snapshot = pin(db)
        if snapshot == nil, let db { giveBack(db) }
        pending.append(Pending(event: event, snapshot: snapshot))
        lock.unlock()
        if snapshot == nil, case .start(_, let observation) = event {
            (observation as? FailableObservation)?.fail(StoreError(code: .cannotOpen, message: "cannot open a read connection for observing"))
        }
    }

    /// Ends every observation with `error` (on the queue, after the
    /// deliveries queued before it): the store's file was replaced.
    func fail(_ error: StoreError) {
        queue.async {
            for id in self.order { (self.observations[id] as? FailableObservation)?.fail(error) }
        }
    }

    /// Removes an observation (on the queue, after any delivery in progress).
    func remove(_ id: ObjectIdentifier) {
        let work: @Sendable () -> Void = {
            let removed = self.observations.removeValue(forKey: id) != nil
            // The events removed are released after the lock: an observation
            // that joined holds a pin, which takes the lock when it goes.
            let removedEvents = self.lock.withLock {
                let removing = { (pending: Pending) -> Bool in
                    switch pending.event {
                    case .start(let other, _), .join(let other, _): return other == id
                    case .commit: return false
                    }
                }
                let removed = self.pending.filter(removing)
                self.pending.removeAll(where: removing)
                return removed
            }
            let pendingHere = !removedEvents.isEmpty
            self.order.removeAll { $0 == id }
            // The last one gone: let go of the watcher and the connections.
            guard removed || pendingHere, self.becameUnobserved() else { return }
            self.watcher?.stop()
            self.watcher = nil
            self.connection = nil
            self.lock.withLock {
                self.pooled -= self.idle.count
                self.idle = []
            }
        }
        if isOnQueue { work() } else { queue.async(execute: work) }
    }

    /// Processes everything queued so far, synchronously.
    func drain() {
        if isOnQueue { pump() } else { queue.sync { pump() } }
    }

    // MARK: - The pump (on the queue)

    private func pump() {
        while true {
            lock.lock()
            let events = pending
            pending = []
            scheduled = false
            lock.unlock()
            guard !events.isEmpty else { return }
            // Events without a snapshot wait for the next one that has one,
            // and are applied with it (merged).
            var waiting = ChangedRows()
            var waitingSilenced: Set<ObjectIdentifier>?
            var hasWaiting = false
            for (offset, event) in events.enumerated() {
                switch event.event {
                case .join(let id, let observation):
                    observations[id] = observation
                    order.append(id)
                case .start(let id, let observation):
                    if let db = event.snapshot {
                        // The pin lives on in the snapshots delivered for this event.
                        let pin = makePin(db)
                        pin.withDatabase { db in
                            if hasWaiting { apply(waiting, silenced: waitingSilenced ?? [], on: db, pin: pin) }
                            hasWaiting = false
                            waiting = ChangedRows()
                            waitingSilenced = nil
                            observations[id] = observation
                            order.append(id)
                            observation.start(db, pin: pin)
                            logPosition = ChangeLog.position(db)
                        }
                        latestPin = pin
                        eventsSinceRenewal += 1
                    }
                case .commit(let changes, let silenced):
                    waiting.formUnion(changes)
                    waitingSilenced = waitingSilenced.map { $0.intersection(silenced) } ?? silenced
                    hasWaiting = true
                    if let db = event.snapshot {
                        let pin = makePin(db)
                        pin.withDatabase { db in apply(waiting, silenced: waitingSilenced ?? [], on: db, pin: pin) }
                        latestPin = pin
                        eventsSinceRenewal += 1
                        hasWaiting = false
                        waiting = ChangedRows()
                        waitingSilenced = nil
                    }
                }
                if hasWaiting, offset == events.count - 1 {
                    // Nothing later to merge with: queue what waits again,
                    // in front, and pin a fresh snapshot behind it.
                    lock.lock()
                    pending.insert(Pending(event: .commit(waiting, silenced: waitingSilenced ?? []), snapshot: nil), at: 0)
                    lock.unlock()
                    enqueuePinned(.commit(ChangedRows(), silenced: []))
                }
            }
            if eventsSinceRenewal >= Self.renewalInterval, lock.withLock({ pending.isEmpty }) {
                eventsSinceRenewal = renewLatestPin() ? 0 : Self.renewalInterval - Self.renewalRetry
            }
            if watchesForCommits, watcher == nil, !observations.isEmpty {
                if connection == nil { connection = try? openConnection() }
                guard let connection else { continue }
                let watcher = CommitWatcher(connection: connection.connection, queue: queue)
                let path = connection.connection.path
                watcher.start(onCommit: { [weak self] in self?.record(.external, silenced: []) },
                              onReplaced: { [weak self] in self?.fail(Database.fileReplaced(path)) })
                self.watcher = watcher
            }
        }
    }

    /// Lets the WAL restart while snapshots are held.
    ///
    /// Snapshots read through the read transaction of the last event, and a
    /// reader holding WAL frames keeps writers from restarting the WAL, so
    /// with a snapshot always held it would grow with every commit. Here,
    /// when a passive checkpoint copies every frame to the database (which
    /// proves the latest pin is at the newest commit: a checkpoint cannot
    /// go past a reader's frames), a new read transaction is started (it
    /// reads the database file only, holding no frames) and, unless a
    /// commit came in between (the WAL's size says), it replaces the latest
    /// pin for everything that read through it. (Neither `data_version`
    /// nor the WAL's size changes from the first checkpoint to the second.)
    ///
    /// - Returns: whether it was renewed (or there was nothing to renew).
    private func renewLatestPin() -> Bool {
        guard let old = latestPin, !observations.isEmpty else { return true }
        if connection == nil { connection = try? openConnection() }
        guard let connection else { return false }
        func checkpoint() -> (log: Int64, copied: Int64)? {
            guard let row = try? connection.fetchRows(sql: "PRAGMA wal_checkpoint(PASSIVE)").first, row.values.count == 3,
                  case .integer(let log) = row.values[1], case .integer(let copied) = row.values[2], log >= 0 else { return nil }
            return (log, copied)
        }
        // `data_version` on this connection changes when any other connection commits.
        func dataVersion() -> SQLiteValue? { try? connection.fetchRows(sql: "PRAGMA data_version").first?.values.first }
        let version = dataVersion()
        guard version != nil, let before = checkpoint() else { return false }
        guard before.log > 0 else { return true }
        guard before.copied == before.log else { return false }
        let db = snapshotConnection()
        lock.lock()
        let pinned = pin(db)
        if pinned == nil, let db { giveBack(db) }
        lock.unlock()
        guard let pinned else { return false }
        let new = makePin(pinned)
        guard let after = checkpoint(), after.log == before.log, dataVersion() == version else { return false }
        for id in order { observations[id]?.repin(from: old, to: new) }
        latestPin = new
        return true
    }

    /// Applies changes to every observation, against a snapshot that holds them all.
    private func apply(_ changes: ChangedRows, silenced: Set<ObjectIdentifier>, on db: Database, pin: ReadPin) {
        guard !changes.isEmpty else { return }
        db.refreshSchemaIfChanged()
        var changes = changes
        if changes.readsLog, let position = logPosition, let (logged, now) = try? ChangeLog.changes(after: position, on: db) {
            changes = changes.resolving(logged)
            logPosition = now
            guard !changes.isEmpty else { return }
        } else {
            logPosition = ChangeLog.position(db)
        }
        for id in order {
            guard let observation = observations[id] else { continue }
            observation.update(db, pin: pin, changes: changes, silent: silenced.contains(id))
        }
    }
}

/// An observation that can report that it cannot run.
protocol FailableObservation {
    func fail(_ error: StoreError)
}
