/// Where the change tracker reports this store's commits: the observation center.
protocol CommitListener: AnyObject, Sendable {
    /// Whether anything is observed now (rows are recorded only then).
    var isObserving: Bool { get }
    /// One or more commits of this store, with what they changed, right
    /// after COMMIT on the writer's queue (before anything else can commit
    /// through it). `number`: the commit counter's reading for the commit,
    /// when `ExternalCommits` knows it follows every commit pinned so far.
    func committed(_ changes: ChangedRows, silenced: Set<ObjectIdentifier>, number: UInt32?)
}

/// Hands each committed transaction's changed rows to observers: reads the
/// rowids of the hook broker's capture (savepoints already applied) when
/// the transaction commits; nothing when it rolls back.
///
/// Whether rows are recorded is chosen before each BEGIN, from whether
/// anything is observed; a transaction that began before the first
/// observation and commits after it reports "unknown" (re-read).
///
/// Used only on the writer's queue.
final class ChangeTracker: TransactionObserver {
    private unowned let broker: HookBroker
    private let commits: ExternalCommits
    private weak var listener: CommitListener?

    /// Whether this transaction's rows are recorded.
    private var isTracking = false {
        didSet { broker.recordsRowIDs = isTracking }
    }
    /// Observations the current transaction must not notify.
    var silenced: Set<ObjectIdentifier> = []

    /// The silenced observations of each transaction whose commit hook ran, not yet reported.
    private var committing: [Set<ObjectIdentifier>] = []
    /// `ExternalCommits` was told of the commit in progress.
    private var toldCommits = false
    private var schemaGeneration: Int
    /// The writer's connection, whose page writes tell whether a commit made one.
    private unowned let connection: Connection
    /// Its page-write statistics in the commit hook of the commit in progress, when it is numbered (something is observed).
    private var pagesAtCommit: Connection.PageWrites?

    init(db: Database, broker: HookBroker, commits: ExternalCommits, listener: CommitListener) {
        self.broker = broker
        connection = db.connection
        self.commits = commits
        self.listener = listener
        schemaGeneration = db.schema.generation
        broker.add(self)
    }

    func uninstall() {
        broker.remove(self)
    }

    // MARK: - TransactionObserver

    func databaseWillBegin() {
        let observing = listener?.isObserving ?? false
        if observing != isTracking { isTracking = observing }
    }

    func databaseWillCommit() {
        committing.append(silenced)
        if committing.count == 1, listener?.isObserving == true {
            pagesAtCommit = connection.pageWrites
            commits.ownCommitBegins()
            toldCommits = true
        }
    }

    func databaseCommitDidFail() {
        _ = committing.popLast()
        guard committing.isEmpty else { return }
        pagesAtCommit = nil
        endCommit()
    }

    func databaseDidCommit(_ db: Database, changes captured: [CapturedChanges]) {
        var silenced: Set<ObjectIdentifier>? = nil
        for quiet in committing {
            silenced = silenced.map { $0.intersection(quiet) } ?? quiet
        }
        let single = committing.count == 1
        committing = []
        // A commit that wrote no page is none (the counter did not move),
        // whatever rows its statements reported.
        let wrote = pagesAtCommit.map { connection.committedMainPages(since: $0) } ?? false
        pagesAtCommit = nil
        defer { endCommit() }
        var changes = ChangedRows()
        for transaction in captured where isTracking { changes.formUnion(Self.changedRows(transaction)) }
        // This connection's own DDL drops the schema cache as it runs, and
        // so does another connection's, seen at BEGIN: either way the
        // schema may differ from what observers planned with.
        if db.schema.generation != schemaGeneration {
            schemaGeneration = db.schema.generation
            changes.schemaChanged = true
        }
        guard let listener, listener.isObserving else { return }
        // Observed since this transaction began: its rows were not recorded.
        if !isTracking { changes.formUnion(.unknown) }
        let number = toldCommits && single ? commits.ownCommitNumber(wroteSomething: wrote) : nil
        listener.committed(changes, silenced: silenced ?? [], number: number)
    }

    private func endCommit() {
        guard toldCommits else { return }
        toldCommits = false
        commits.ownCommitEnded()
    }

    /// The rows a captured transaction changed: for each table, the rowids
    /// it inserted, updated (old and new rowid) or deleted.
    ///
    /// - Complexity: O(k) for k captured changes.
    static func changedRows(_ captured: CapturedChanges) -> ChangedRows {
        var changes = ChangedRows()
        var table: String?
        var rowIDs: Set<Int64> = []
        for entry in captured.entries {
            if entry.table != table {
                if let table { changes.insert(rowIDs, in: table) }
                table = entry.table
                rowIDs = []
            }
            if entry.operation != .insert { rowIDs.insert(entry.oldRowID) }
            if entry.operation != .delete, entry.operation == .insert || entry.rowID != entry.oldRowID {
                rowIDs.insert(entry.rowID)
            }
        }
        if let table { changes.insert(rowIDs, in: table) }
        for untracked in captured.untrackedTables { changes.markUnknown(untracked) }
        return changes
    }
}

// The tracker belongs to the writer's queue.
@available(*, unavailable)
extension ChangeTracker: Sendable {}
