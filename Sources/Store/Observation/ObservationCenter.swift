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
    /// Reads what was read through pins at commit `commit` through `new`
    /// from now on, a read transaction at the same state.
    func repin(at commit: UInt32, to new: ReadPin)
}

extension StoreObservation {
    func repin(at commit: UInt32, to new: ReadPin) {}
}

/// Runs the store's observations on their own queue, in the order of the
/// events that change what they see.
///
/// Every event observers must see (one of this store's commits, another
/// connection's commit that `ExternalCommits` heard of, an observation
/// starting) is *pinned*: a read transaction is started on a connection of
/// the `SnapshotPool`, and the event is queued with it, both under the
/// pool's lock. So events are queued in the order their snapshots were
/// taken, and each snapshot holds at least what the ones before it hold:
/// observations only ever move forward, through states that commits
/// produced. Right after this store's COMMIT, while the writer holds off
/// the next one, the snapshot is exactly that commit unless another
/// connection committed in between; `ExternalCommits.pinned(_:own:)` tells,
/// and then the changeset covers both commits. An observation starting
/// pins a snapshot too, which counts as heard: another connection's commit
/// it holds is read from the change log for the observations already
/// running, before the new one starts there (or, when it joined at a
/// snapshot the caller read, with the next event, from which it reads the
/// log from its own snapshot).
///
/// When all snapshot connections are in use (observers far behind), a
/// commit waits for one, up to `SnapshotPool.snapshotWait`; past that it is
/// queued without a snapshot and applied, merged, with the next event that has one.
final class ObservationCenter: @unchecked Sendable {
    // @unchecked Sendable: `pending` and `scheduled` are guarded by the
    // pool's lock; `observations`, `order` and the renewal state are only
    // touched on `queue`.

    enum Event {
        case commit(ChangedRows, silenced: Set<ObjectIdentifier>)
        /// An observation to start at this event's snapshot.
        case start(ObjectIdentifier, StoreObservation)
        /// An observation whose state was read elsewhere at this point of
        /// the sequence (a snapshot at commit `commit`, where the change
        /// log stood at `position`): it takes part in every later event.
        case join(ObjectIdentifier, StoreObservation, commit: UInt32?, position: ChangeLog.Position?)
    }

    private struct Pending {
        var event: Event
        /// A read transaction on the state right after this event, if one could be pinned.
        var snapshot: PinnedSnapshot?
    }

    let queue = DispatchQueue(label: "sluice.observation")
    private let queueKey = DispatchSpecificKey<Bool>()
    let pool: SnapshotPool
    /// Hears other connections' commits, checks this store's, reads the change log.
    let commits: ExternalCommits
    private var pending: [Pending] = []
    private var scheduled = false
    private(set) var observations: [ObjectIdentifier: StoreObservation] = [:]
    private(set) var order: [ObjectIdentifier] = []
    private let count = Mutex(0)
    /// The commit counter at the snapshot every observation is at (queue
    /// only; nil when unknown or nothing is observed).
    private(set) var appliedCommit: UInt32?
    /// Observations that joined at a snapshot other than the others': from
    /// the next event on, each reads the change log from where it stood at
    /// its own snapshot (queue only).
    private var joinedAt: [ObjectIdentifier: ChangeLog.Position?] = [:]
    /// Called (on the queue) when a commit another connection made changed
    /// the schema: the store has its writer install the change log's
    /// triggers again where they no longer list their tables' columns.
    var schemaChangedElsewhere: (@Sendable () -> Void)?
    /// Attempts in a row that could not pin a snapshot for merged events (queue only).
    private var pinFailures = 0
    /// The WAL's upkeep (queue only): see `ObservationCenter+WAL.swift`.
    var wal = WALUpkeep()

    init(commits: ExternalCommits, openConnection: @escaping () throws -> Database) {
        self.commits = commits
        pool = SnapshotPool(counter: commits.counter, openConnection: openConnection)
        queue.setSpecific(key: queueKey, value: true)
    }

    var isOnQueue: Bool { DispatchQueue.getSpecific(key: queueKey) == true }

    /// Whether anything is observed now.
    var isObserving: Bool { count.withLock { $0 > 0 } }

    // MARK: - Events

    /// Queues a commit with a snapshot of the state it committed: this
    /// store's (`own`: the number `ExternalCommits` gave it, if known), or
    /// another connection's (`changes.readsLog`).
    func record(_ changes: ChangedRows, silenced: Set<ObjectIdentifier>, own: UInt32?, external: Bool) {
        guard isObserving, !changes.isEmpty else { return }
        let db = pool.connection(mayWait: !isOnQueue)
        let (schedule, raced) = pool.withLock { () -> (Bool, Bool) in
            var event = Pending(event: .commit(changes, silenced: silenced), snapshot: pool.pin(db))
            let raced = commits.pinned(event.snapshot?.commit, own: own)
            if raced, !external {
                // The snapshot holds this commit and perhaps another
                // connection's: the changeset covers both. Queue the other
                // commit too, in case it landed after the snapshot was taken.
                var unknown = ChangedRows.external
                unknown.formUnion(changes)
                event.event = .commit(unknown, silenced: [])
            }
            pending.append(event)
            defer { scheduled = true }
            return (!scheduled, raced && !external)
        }
        if raced { record(.external, silenced: [], own: nil, external: true) }
        if schedule { queue.async { self.pump() } }
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
        let db = pool.connection(mayWait: !isOnQueue)
        let pinned = pool.withLock { () -> PinnedSnapshot? in
            guard let pinned = pool.pin(db) else { return nil }
            commits.pinned(pinned.commit)
            var position = ChangeLog.position(pinned.db)
            position?.commit = pinned.commit
            pending.append(Pending(event: .join(ObjectIdentifier(observation), observation, commit: pinned.commit, position: position),
                                   snapshot: nil))
            return pinned
        }
        guard let pinned else {
            becameUnobserved()
            throw StoreError(code: .cannotOpen, message: "cannot start a read transaction for observing")
        }
        return pool.makePin(pinned)
    }

    private func becameObserved() {
        let first = count.withLock { count in
            count += 1
            return count == 1
        }
        if first { commits.setWatching(true, sink: self) }
    }

    /// One observation fewer; returns whether it was the last.
    @discardableResult
    private func becameUnobserved() -> Bool {
        let last = count.withLock { count in
            count -= 1
            return count == 0
        }
        if last { commits.setWatching(false, sink: self) }
        return last
    }

    /// On the queue: pins a connection for an event, opening one beyond
    /// the pool's size when none is free (the queue cannot wait for one);
    /// returns whether it could.
    @discardableResult
    func enqueuePinned(_ event: Event) -> Bool {
        let db = pool.connection(mayWait: false, beyondPool: true)
        let snapshot = pool.withLock { () -> PinnedSnapshot? in
            let snapshot = pool.pin(db)
            commits.pinned(snapshot?.commit)
            pending.append(Pending(event: event, snapshot: snapshot))
            return snapshot
        }
        if snapshot == nil, case .start(_, let observation) = event {
            (observation as? FailableObservation)?.fail(StoreError(code: .cannotOpen, message: "cannot open a read connection for observing"))
        }
        return snapshot != nil
    }

    /// Removes an observation (on the queue, after any delivery in progress).
    func remove(_ id: ObjectIdentifier) {
        let work: @Sendable () -> Void = {
            let removed = self.observations.removeValue(forKey: id) != nil
            // The events removed are released after the lock: an observation
            // that joined holds a pin, which takes the lock when it goes.
            let removedEvents = self.pool.withLock {
                let removing = { (pending: Pending) -> Bool in
                    switch pending.event {
                    case .start(let other, _), .join(let other, _, _, _): return other == id
                    case .commit: return false
                    }
                }
                let removed = self.pending.filter(removing)
                self.pending.removeAll(where: removing)
                return removed
            }
            let pendingHere = !removedEvents.isEmpty
            self.order.removeAll { $0 == id }
            self.joinedAt[id] = nil
            // The last one gone: let go of the watch and the connections.
            guard removed || pendingHere, self.becameUnobserved() else { return }
            self.appliedCommit = nil
            self.pool.closeIdle()
        }
        if isOnQueue { work() } else { queue.async(execute: work) }
    }

    /// Processes everything queued so far, synchronously.
    func drain() {
        if isOnQueue { pump() } else { queue.sync { pump() } }
    }

    // MARK: - The pump (on the queue)

    /// What one pass over the queued events did.
    enum Batch {
        /// Nothing was queued.
        case empty
        /// Events were applied.
        case applied
        /// Events wait for a snapshot that could not be pinned; the pump runs again later.
        case deferred
    }

    private func pump() {
        while true {
            switch applyQueued() {
            case .empty:
                scheduleIdleUpkeep()
                return
            case .deferred:
                return
            case .applied:
                keepWALBounded()
            }
        }
    }

    /// Applies the events queued so far, in order (on the queue).
    func applyQueued() -> Batch {
        let events = pool.withLock {
            defer {
                pending = []
                scheduled = false
            }
            return pending
        }
        guard !events.isEmpty else { return .empty }
        wal.eventApplied()
        // Events without a snapshot wait for the next one that has one,
        // and are applied with it (merged).
        var waiting = ChangedRows()
        var waitingSilenced: Set<ObjectIdentifier>?
        var hasWaiting = false
        for (offset, event) in events.enumerated() {
            switch event.event {
            case .join(let id, let observation, let commit, let position):
                // Another connection's commit may have come before the
                // join's snapshot unheard (the snapshot counts as heard):
                // the others are brought there with the next event, and
                // this one reads the log from its own snapshot.
                if observations.isEmpty {
                    commits.startLog(at: position)
                    appliedCommit = commit
                } else if hasWaiting || commit == nil || commit != appliedCommit {
                    joinedAt[id] = position
                    waiting.formUnion(.external)
                    waitingSilenced = []
                    hasWaiting = true
                }
                observations[id] = observation
                order.append(id)
            case .start(let id, let observation):
                if let snapshot = event.snapshot {
                    // The pin lives on in the snapshots delivered for this event.
                    let pin = pool.makePin(snapshot)
                    pin.withDatabase { db in
                        // The others are brought to this snapshot first:
                        // commits queued without one, and any other
                        // connection's commit not heard yet (the snapshot counts as heard).
                        if !observations.isEmpty, hasWaiting || snapshot.commit == nil || snapshot.commit != appliedCommit {
                            var changes = ChangedRows.external
                            changes.formUnion(waiting)
                            apply(changes, silenced: [], on: db, pin: pin)
                        }
                        hasWaiting = false
                        waiting = ChangedRows()
                        waitingSilenced = nil
                        observations[id] = observation
                        order.append(id)
                        observation.start(db, pin: pin)
                        commits.startLog(at: db, commit: snapshot.commit)
                    }
                    pin.endEvent()
                    appliedCommit = snapshot.commit
                }
            case .commit(let changes, let silenced):
                waiting.formUnion(changes)
                waitingSilenced = waitingSilenced.map { $0.intersection(silenced) } ?? silenced
                hasWaiting = true
                if let snapshot = event.snapshot {
                    let pin = pool.makePin(snapshot)
                    pin.withDatabase { db in apply(waiting, silenced: waitingSilenced ?? [], on: db, pin: pin) }
                    pin.endEvent()
                    appliedCommit = snapshot.commit
                    hasWaiting = false
                    waiting = ChangedRows()
                    waitingSilenced = nil
                }
            }
            if hasWaiting, offset == events.count - 1 {
                // Nothing later to merge with: queue what waits again,
                // in front, and pin a fresh snapshot behind it (which
                // counts as heard: another connection's commit it holds
                // is read from the log); when none can be pinned, try
                // again later, less and less often (not at once: that would spin).
                pool.withLock {
                    pending.insert(Pending(event: .commit(waiting, silenced: waitingSilenced ?? []), snapshot: nil), at: 0)
                }
                if !enqueuePinned(.commit(.external, silenced: [])) {
                    pinFailures += 1
                    let delay = min(1_000, 10 << min(pinFailures, 7))
                    queue.asyncAfter(deadline: .now() + .milliseconds(delay)) { self.pump() }
                    return .deferred
                }
                pinFailures = 0
            }
        }
        return .applied
    }

    /// Moves every observation from the pins at the applied commit to
    /// `new`, a read transaction at the same state (one that holds no WAL
    /// frames). Several events can pin one commit (this store's and a look
    /// for other connections' commits), so pins are matched by commit.
    func repinLatest(to new: ReadPin) {
        guard let commit = appliedCommit, new.commit == commit else { return }
        for id in order { observations[id]?.repin(at: commit, to: new) }
    }

    var isIdle: Bool { pool.withLock { pending.isEmpty } }
    var hasObservations: Bool { !observations.isEmpty }

    /// Applies changes to every observation, against a snapshot that holds
    /// them all; an observation that joined at a snapshot of its own reads
    /// the change log from there instead.
    private func apply(_ changes: ChangedRows, silenced: Set<ObjectIdentifier>, on db: Database, pin: ReadPin) {
        guard !changes.isEmpty else { return }
        db.refreshSchemaIfChanged()
        let resolved = commits.resolve(changes, at: db, commit: pin.commit)
        if resolved.schemaChanged { schemaChangedElsewhere?() }
        let joined = joinedAt
        joinedAt = [:]
        for id in order {
            guard let observation = observations[id] else { continue }
            var changes = resolved
            if let position = joined[id] {
                changes = ExternalCommits.resolve(.external, after: position, at: db, commit: pin.commit).0
            }
            guard !changes.isEmpty else { continue }
            observation.update(db, pin: pin, changes: changes, silent: silenced.contains(id))
        }
    }
}
