/// Hands each committed transaction's changed rows to observers: reads the
/// rowids of the hook broker's capture (savepoints already applied) when
/// the transaction commits; nothing when it rolls back.
///
/// Used only on the writer's queue.
final class ChangeTracker: TransactionObserver {
    private unowned let broker: HookBroker

    var capture: ChangeCapture { broker.capture }
    /// Whether anything observes the store; when not, nothing is recorded.
    var isTracking = false {
        didSet { broker.recordsRowIDs = isTracking }
    }
    /// Observations the current transaction must not notify.
    var silenced: Set<ObjectIdentifier> = []
    /// Called with each committed transaction's changes (after COMMIT, on
    /// the writer's queue, before the next transaction can begin).
    var onCommit: (ChangedRows, Set<ObjectIdentifier>) -> Void = { _, _ in }

    /// The silenced observations of each transaction whose commit hook ran, not yet reported.
    private var committing: [Set<ObjectIdentifier>] = []
    private var schemaGeneration: Int

    init(db: Database, broker: HookBroker) {
        self.broker = broker
        schemaGeneration = db.schema.generation
        broker.add(self)
    }

    func uninstall() {
        broker.remove(self)
    }

    // MARK: - TransactionObserver

    func databaseWillCommit() {
        committing.append(silenced)
    }

    func databaseCommitDidFail() {
        _ = committing.popLast()
    }

    func databaseDidCommit(_ db: Database, changes captured: [CapturedChanges]) {
        var silenced: Set<ObjectIdentifier>? = nil
        for quiet in committing {
            silenced = silenced.map { $0.intersection(quiet) } ?? quiet
        }
        committing = []
        var changes = ChangedRows()
        if isTracking {
            for transaction in captured { changes.formUnion(Self.changedRows(transaction)) }
        }
        // This connection's own DDL drops the schema cache as it runs, and
        // so does another connection's, seen at BEGIN: either way the
        // schema may differ from what observers planned with.
        if db.schema.generation != schemaGeneration {
            schemaGeneration = db.schema.generation
            changes.schemaChanged = true
        }
        guard isTracking else { return }
        onCommit(changes, silenced ?? [])
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
