import Dispatch
import Foundation

/// What the observation queue keeps to bound the WAL while snapshots are
/// held (queue only).
struct WALUpkeep {
    /// Past this many bytes of WAL, the queue tries to renew its latest pin
    /// (a passive checkpoint and a new read transaction at the same state)
    /// after each batch of events that leaves it caught up, and every
    /// `renewalRetry` events while it is not.
    static let renewalBytes: Int64 = 1 << 20
    static let renewalRetry = 16
    /// Past this many bytes, it restarts the WAL itself (a RESTART
    /// checkpoint, which holds off writers once it has the write lock);
    /// after one that did not succeed, again `restartRetry` events later.
    static let restartBytes: Int64 = 2 << 20
    static let restartRetry = 8
    /// How long a RESTART checkpoint waits, at most, for the write lock and
    /// for readers to let go: 0.1 s, doubled after each one that could not
    /// restart, up to 1.6 s (a slow observer, under load or a sanitizer,
    /// needs longer to apply the commits it has not applied; writers wait
    /// that long only while it holds the write lock).
    static func restartBudget(failures: Int) -> TimeInterval { 0.1 * Double(1 << min(failures, 4)) }
    /// Once the queue falls idle, it moves its latest pin to one that holds
    /// no WAL frames after these pauses (then stops: nothing runs while
    /// nothing is committed). A checkpoint by another connection, and
    /// another store's restart, wait for that.
    static let idleDelays: [Int] = [2, 10, 50, 250, 1_000]
    /// While another connection's checkpoint is under way (the queue's own
    /// passive one finds it busy), the queue moves its pin again this often,
    /// up to `elsewhereAttempts` more times: once that checkpoint has copied
    /// every frame, a new pin reads the database file only and lets it
    /// finish (a RESTART or TRUNCATE waits for that, up to its busy timeout).
    static let elsewhereDelay = 200
    static let elsewhereAttempts = 25

    /// Whether the latest pin was renewed since the last event (it holds no frames).
    var clean = false
    /// Events since the last attempt to renew.
    var eventsSinceAttempt = WALUpkeep.renewalRetry
    /// Events since the last restart that did not succeed.
    var eventsSinceRestart = WALUpkeep.restartRetry
    /// Counts events, so that an idle timer knows whether one came since it was set.
    var generation = 0
    /// Whether a restart is running (its waits apply events too).
    var restarting = false
    /// Restarts in a row that could not restart the WAL.
    var restartFailures = 0
    /// The last renewal found another connection's checkpoint under way.
    var checkpointElsewhere = false

    mutating func eventApplied() {
        clean = false
        eventsSinceAttempt += 1
        eventsSinceRestart += 1
        generation &+= 1
    }
}

/// The WAL's upkeep: pinned snapshots never let it grow without bound.
///
/// A read transaction that holds WAL frames keeps checkpoints from copying
/// the frames after it and writers from starting the WAL again ("checkpoint
/// starvation"), and the observation queue always holds one: the latest
/// event's, which delivered snapshots read their elements through. With a
/// writer committing steadily, the writer's own checkpoints always find
/// that pin one commit behind, so the WAL never restarts. Three things keep
/// it bounded:
///
/// - past `WALUpkeep.renewalBytes` (1 MiB), the queue renews its latest pin when a
///   passive checkpoint shows it is at the newest commit;
/// - past `WALUpkeep.restartBytes` (2 MiB), it runs a RESTART checkpoint, which
///   holds off writers while it waits: meanwhile the queue applies the
///   commits it has not applied and moves to a pin that holds no frames;
/// - when it falls idle, it renews its pin, so that a checkpoint by another
///   connection (or another store's restart) finds no reader holding frames;
///   under 1 MiB of WAL it only takes the pin again, with no checkpoint of its
///   own (which would make another connection's TRUNCATE fail at once), and
///   again after any write to the files (that checkpoint's copying).
extension ObservationCenter {
    /// After a batch of events: renews the latest pin or restarts the WAL
    /// when the WAL has grown past the bounds.
    func keepWALBounded() {
        guard !wal.restarting, hasObservations, let bytes = commits.counter.walBytes() else { return }
        if bytes < WALUpkeep.renewalBytes { return }
        // Caught up (nothing queued): renewing now lets the next writer
        // restart the WAL; while events wait, every `renewalRetry` events.
        if isIdle || wal.eventsSinceAttempt >= WALUpkeep.renewalRetry {
            wal.eventsSinceAttempt = 0
            if renewLatestPin() { return }
        }
        guard bytes >= WALUpkeep.restartBytes, wal.eventsSinceRestart >= WALUpkeep.restartRetry else { return }
        if restartWAL() {
            wal.restartFailures = 0
        } else {
            wal.eventsSinceRestart = 0
            wal.restartFailures += 1
        }
    }

    /// Moves the latest pin to one at the same state that holds no WAL
    /// frames, when a passive checkpoint shows it can (`SnapshotPool.renew`).
    ///
    /// - Returns: whether it did (or the WAL is empty); false when there is
    ///   no latest pin or events wait (their pins hold frames).
    @discardableResult
    func renewLatestPin(checkpointing: Bool = true) -> Bool {
        guard appliedCommit != nil, hasObservations, isIdle else { return false }
        switch pool.renew(at: appliedCommit, checkpointing: checkpointing) {
        case .unneeded:
            return true
        case .failed:
            return false
        case .renewed(let new):
            repinLatest(to: new)
            wal.clean = true
            return true
        case .repinned(let new):
            repinLatest(to: new)
            wal.checkpointElsewhere = true
            return false
        case .moved(let new, let duringCheckpoint):
            // Taken again after anyone's checkpoint: the next write to the files
            // (another checkpoint's) takes it again. Taken while one copies
            // frames (it was heard writing the file before it finished), it may
            // hold some: again, as for a checkpoint found busy, until it is done.
            repinLatest(to: new)
            if duringCheckpoint {
                wal.checkpointElsewhere = true
                return false
            }
            return true
        }
    }

    /// Restarts the WAL (`SnapshotPool.restart`): while the checkpoint holds
    /// off writers and waits for readers, the commits not applied yet are
    /// applied (changesets are delivered as usual), then the latest pin is
    /// moved to one that holds no frames.
    func restartWAL() -> Bool {
        wal.restarting = true
        defer { wal.restarting = false }
        return pool.restart(budget: WALUpkeep.restartBudget(failures: wal.restartFailures)) {
            let commit = appliedCommit
            if !isIdle || commits.counter.read() != commit {
                // One batch per call: until the checkpoint holds off
                // writers, a writer committing back to back would keep this
                // busy for good.
                if isIdle { enqueuePinned(.commit(.external, silenced: [])) }
                _ = applyQueued()
                return
            }
            if let new = pool.pinAgain(at: commit) { repinLatest(to: new) }
        }
    }

    /// Once no event is queued: renews the latest pin after a pause, unless
    /// an event comes first (then the next idle time starts over).
    func scheduleIdleUpkeep(attempt: Int = 0) {
        if attempt == 0 { wal.checkpointElsewhere = false }
        let delays = WALUpkeep.idleDelays.count
        // Past the pauses, only while another connection's checkpoint is under way (bounded).
        guard !wal.clean, !wal.restarting, hasObservations,
              attempt < delays || (wal.checkpointElsewhere && attempt < delays + WALUpkeep.elsewhereAttempts) else { return }
        let generation = wal.generation
        let delay = attempt < delays ? WALUpkeep.idleDelays[attempt] : WALUpkeep.elsewhereDelay
        queue.asyncAfter(deadline: .now() + .milliseconds(delay)) {
            guard self.wal.generation == generation, !self.wal.clean, self.isIdle, self.hasObservations else { return }
            guard let bytes = self.commits.counter.walBytes(), bytes > 0 else { return }
            // A small WAL is left to the writers' checkpoints (and another
            // connection's): the pin only moves, so that this queue's own
            // checkpoint never makes theirs fail at once.
            if !self.renewLatestPin(checkpointing: bytes >= WALUpkeep.renewalBytes) { self.scheduleIdleUpkeep(attempt: attempt + 1) }
        }
    }
}

