import Dispatch
import Foundation

/// Where `ExternalCommits` reports: the observation center.
protocol ExternalCommitSink: AnyObject, Sendable {
    /// Another connection or process committed: pin a snapshot now and
    /// bring observations to it.
    func externalCommitNoticed()
    /// The file at the store's path is no longer the one it opened.
    func fileReplaced(_ error: StoreError)
    /// The database's files were written (a commit, or a checkpoint that
    /// may be waiting for this store's readers to let go of the WAL).
    func filesWritten()
}

/// The one owner of "another connection committed", for one store.
///
/// - **Wake-ups.** While anything is observed, a `FileEventSource` (inotify
///   on Linux, dispatch sources and Darwin notifications on Apple platforms,
///   a one-second poll where neither runs) wakes it when the database's files
///   change; nothing runs while nothing is observed or nothing is written.
///   Then it reads the file's `CommitCounter`: a number past the newest
///   commit some pinned snapshot holds is another connection's commit, and
///   the sink pins a snapshot for it at once, so commits heard one by one
///   get a changeset each. After a write it looks again at 0.25, 0.5, 1,
///   ... 256 ms, then each second for five seconds (`rechecks`): a commit's
///   WAL frames are written before the wal-index says it committed, with an
///   fsync in between.
/// - **The race check.** This store's own commit gets the number after the
///   one its commit hook read (the writer holds the write lock there). The
///   snapshot pinned after it holds exactly that commit when its counter
///   reads that number and every earlier commit was pinned already;
///   otherwise another connection's commit is in it too (`pinned(_:own:)`).
/// - **The change log's reading.** Other connections' commits are read
///   from the log between two pinned snapshots (`resolve`), exactly when the
///   log names each commit in between (`ChangeLog.changes(after:on:commit:)`).
/// - **A replaced file**: the folder's events (or the poll) compare the
///   file at the path with the one the store opened.
///
/// Thread-safe: the state is under a lock; events run on `queue`.
final class ExternalCommits: @unchecked Sendable {
    // @unchecked Sendable: `state` is a Mutex; `source` and `rechecks` are touched only on `queue`.

    let counter: CommitCounter
    let path: String
    /// Where foreign writers' commits ended, as the snapshots read here saw them.
    let foreignBoundaries = ForeignCommitBoundaries()
    let queue = DispatchQueue(label: "sluice.commits")
    private let queueKey = DispatchSpecificKey<Bool>()
    /// The file the store opened, to notice it being replaced.
    private let file: OpenedFile

    private struct State {
        /// Whether anything is observed (events are wanted).
        var watching = false
        weak var sink: ExternalCommitSink?
        /// The newest commit some pinned snapshot holds (nil before the first
        /// pin). Only a pin moves it (in the order events are queued): a commit
        /// heard but not pinned yet is not in any snapshot.
        var lastPinned: UInt32?
        /// The newest commit reported to the sink: it is not reported again
        /// while its snapshot is being pinned.
        var lastReported: UInt32?
        /// The counter this store's commit hook read, until its commit has been pinned.
        var ownBase: UInt32?
        /// This store's commit is between its commit hook and its pin:
        /// events wait for it (its pin decides what the snapshot holds).
        var ownPending = false
        /// Where the change log stood at the last snapshot observations were brought to.
        var logPosition: ChangeLog.Position?
        /// The file was found replaced: nothing more is reported.
        var replaced = false
        /// The counter's journal-mode epoch `lastPinned` belongs to
        /// (`CommitCounter.epoch`: the two modes count apart).
        var pinnedEpoch = 0
    }
    private let state = Mutex(State())
    private var source: FileEventSource?
    /// Bumped by each event: a pending look-again of an older event stops.
    private var recheckGeneration = 0

    /// Delays of the looks again after a write, in microseconds: doubling
    /// from 0.25 ms to 256 ms, then every second for five more seconds.
    /// (The event of a commit's WAL write comes before the wal-index says
    /// it committed, by an fsync that takes milliseconds, or seconds under
    /// load; and one read of events may hold the writes of several commits.)
    static let rechecks: [Int] = (0..<11).map { 250 << $0 } + Array(repeating: 1_000_000, count: 5)

    /// - Parameters:
    ///   - file: the database file the store opened (its path is watched).
    ///   - openConnection: opens a read connection to it, for the commit
    ///     counter (kept open while anything is observed).
    init(file: OpenedFile, openConnection: @escaping () -> Connection?) {
        path = file.path
        self.file = file
        counter = CommitCounter(open: openConnection)
        queue.setSpecific(key: queueKey, value: true)
    }

    deinit {
        source?.stop()
    }

    // MARK: - Watching

    /// Starts or stops watching as observations come and go; `sink` hears of commits.
    func setWatching(_ watching: Bool, sink: ExternalCommitSink) {
        state.withLock { state in
            state.watching = watching
            state.sink = sink
            if !watching {
                state.lastPinned = nil
                state.lastReported = nil
                state.logPosition = nil
            }
        }
        // The watch starts before this returns, so before the first snapshot
        // is pinned: every commit after that snapshot is written after the
        // watch began, and heard. (Started later, on the queue, it could miss
        // a commit whose WAL was written before it began and whose wal-index
        // said nothing yet when it first looked: an observer then heard no
        // commit until the next one.) Stopping need not wait.
        if watching {
            queue.sync { reconcile() }
        } else {
            queue.async { self.reconcile() }
        }
    }

    /// On the queue: starts or stops the event source as `watching` says.
    private func reconcile() {
        let watching = state.withLock { $0.watching && !$0.replaced }
        if watching, source == nil {
            let handler: @Sendable (FileEvent) -> Void = { [weak self] event in self?.handle(event) }
            if let events = platformFileEvents(path: path, queue: queue, handler: handler), events.start() {
                source = events
            } else {
                let poll = PollingFileEvents(queue: queue, handler: handler)
                _ = poll.start()
                source = poll
            }
            check()    // a commit between the first pin and the watch
        } else if !watching, let events = source {
            events.stop()
            source = nil
            recheckGeneration += 1
            counter.close()
        }
    }

    /// Whether a file-event source (or the safety poll) is running, and
    /// which kind (for tests and diagnostics).
    var watchingSource: String? {
        queue.sync { source.map { String(describing: type(of: $0)) } }
    }

    /// Looks for commits now (for `waitForObservers`), from any thread but the queue's own.
    func checkNow() {
        if DispatchQueue.getSpecific(key: queueKey) == true { check() } else { queue.sync { check() } }
    }

    private func handle(_ event: FileEvent) {
        switch event {
        case .written:
            recheckGeneration += 1
            check()
            recheck(recheckGeneration, attempt: 0)
            state.withLock { $0.watching ? $0.sink : nil }?.filesWritten()
        case .replaced:
            checkReplaced()
        }
    }

    /// Looks again later for a commit that was not visible yet when its write was heard.
    private func recheck(_ generation: Int, attempt: Int) {
        guard attempt < Self.rechecks.count else { return }
        queue.asyncAfter(deadline: .now() + .microseconds(Self.rechecks[attempt])) { [weak self] in
            guard let self, self.recheckGeneration == generation, self.source != nil else { return }
            self.check()
            self.recheck(generation, attempt: attempt + 1)
        }
    }

    /// On the queue: reports a commit newer than every pinned snapshot.
    private func check() {
        let now = counter.read()
        let epoch = counter.epoch
        let sink = state.withLock { state -> ExternalCommitSink? in
            guard state.watching, !state.replaced else { return nil }
            if state.ownPending { return nil }    // its pin looks, then it checks again
            guard let last = state.lastPinned else { return nil }    // the first pin holds it
            // Cannot tell (or the journal mode switched since the last pin): the change log will.
            guard let now, epoch == state.pinnedEpoch else { return state.sink }
            guard CommitCounter.newer(now, than: last), state.lastReported.map({ CommitCounter.newer(now, than: $0) }) ?? true else { return nil }
            state.lastReported = now
            return state.sink
        }
        sink?.externalCommitNoticed()
    }

    private func checkReplaced() {
        guard file.isReplaced else { return }
        let sink = state.withLock { state -> ExternalCommitSink? in
            guard !state.replaced else { return nil }
            state.replaced = true
            return state.sink
        }
        source?.stop()
        source = nil
        sink?.fileReplaced(Database.fileReplaced(path))
    }

    // MARK: - This store's commits (the writer's queue)

    /// In the writer's commit hook, while anything is observed: notes the
    /// counter (the commit about to be made gets the next number) and holds
    /// events until `ownCommitEnded`.
    ///
    /// Another connection's commit that is not pinned yet is pinned here
    /// first: the writer holds the write lock, so a snapshot taken now is
    /// exactly that commit, and this one then gets a changeset of its own
    /// (before, a second store's commit heard late was merged with this one's).
    func ownCommitBegins() {
        let base = counter.read()
        let unheard = state.withLock { state -> ExternalCommitSink? in
            guard state.watching, !state.replaced, let base, let last = state.lastPinned, state.pinnedEpoch == counter.epoch,
                  CommitCounter.newer(base, than: last) else { return nil }
            state.lastReported = base
            return state.sink
        }
        unheard?.externalCommitNoticed()
        state.withLock { state in
            state.ownBase = base
            state.ownPending = true
        }
    }

    /// After the commit: the number it got, when it is known to follow
    /// every commit pinned so far (nil when another connection's commit may
    /// come first, or `wroteSomething` is false: a commit that wrote no page
    /// gets no number).
    func ownCommitNumber(wroteSomething: Bool) -> UInt32? {
        state.withLock { state in
            guard wroteSomething, let base = state.ownBase, base == state.lastPinned else { return nil }
            return base &+ 1
        }
    }

    /// The commit was pinned (or failed, or observed nothing): events are looked at again.
    func ownCommitEnded() {
        state.withLock { state in
            state.ownBase = nil
            state.ownPending = false
        }
        queue.async { [weak self] in
            self?.check()
            self?.source?.announceCommit()
        }
    }

    // MARK: - Snapshots

    /// A snapshot was pinned whose counter reads `commit` (nil: unknown),
    /// after this store's commit numbered `own` (nil: none, or unknown).
    /// Returns whether the snapshot may hold other connections' commits
    /// that are not pinned yet.
    @discardableResult
    func pinned(_ commit: UInt32?, own: UInt32? = nil) -> Bool {
        let (raced, wasFirst) = state.withLock { state -> (Bool, Bool) in
            let wasFirst = state.lastPinned == nil
            let previous = state.lastPinned
            let epoch = counter.epoch
            if let commit, state.pinnedEpoch != epoch {
                state.lastPinned = commit
                state.lastReported = nil
                state.pinnedEpoch = epoch
            } else if let commit, previous.map({ CommitCounter.newer(commit, than: $0) }) ?? true {
                state.lastPinned = commit
            }
            guard let commit else { return (true, wasFirst) }
            return (own != commit, wasFirst)
        }
        if wasFirst { queue.async { [weak self] in self?.check() } }
        return raced
    }

    // MARK: - The change log

    /// Starts reading the log from `db`'s snapshot (an observation started there).
    func startLog(at db: Database, commit: UInt32?) {
        var position = ChangeLog.position(db)
        position?.commit = commit
        if let position { foreignBoundaries.observe(position) }
        startLog(at: position)
    }

    /// Starts reading the log from `position` (where it stood at the snapshot an observation started at).
    func startLog(at position: ChangeLog.Position?) {
        state.withLock { $0.logPosition = position }
    }

    /// `changes` with other connections' commits read from the change log
    /// between the last snapshot and `db`'s, where `changes.readsLog`; and
    /// the log's position moved to `db`'s snapshot either way.
    func resolve(_ changes: ChangedRows, at db: Database, commit: UInt32?) -> ChangedRows {
        let position = state.withLock { $0.logPosition }
        let (resolved, now) = Self.resolve(changes, after: position, at: db, commit: commit)
        if let now { foreignBoundaries.observe(now) }
        state.withLock { $0.logPosition = now }
        return resolved
    }

    /// `changes` with the commits between `position` and `db`'s snapshot
    /// read from the change log, where `changes.readsLog` (left unknown when
    /// there is no position or the log cannot tell); and `db`'s position.
    static func resolve(_ changes: ChangedRows, after position: ChangeLog.Position?, at db: Database,
                        commit: UInt32?) -> (ChangedRows, ChangeLog.Position?) {
        if changes.readsLog, let position, let (logged, now) = try? ChangeLog.changes(after: position, on: db, commit: commit) {
            return (changes.resolving(logged), now)
        }
        var now = ChangeLog.position(db)
        now?.commit = commit
        return (changes, now)
    }
}
