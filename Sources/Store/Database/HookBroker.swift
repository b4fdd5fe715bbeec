import CSQLite
import Foundation

/// The one owner of a writing connection's SQLite hooks: commit, rollback,
/// the preupdate (or update) hook, the authorizer's delegate and the
/// statement callbacks. It yields one `CapturedChanges` per transaction,
/// savepoints applied, to its observers (the change tracker and the change
/// log writer), and tracks savepoints from what the authorizer says each
/// statement does, so raw `SAVEPOINT` / `ROLLBACK TO` / `RELEASE` and
/// `Database.savepoint` are one path. GRDB's `DatabaseObservationBroker` is
/// the model.
///
/// The cycle: statements run; the row hook appends to `current`; a
/// savepoint statement that succeeds moves the savepoint stack (and a
/// `ROLLBACK TO` truncates `current`); `Database.commit()` hands `current` to
/// observers to write their last; the commit hook moves `current` to
/// `committing`; when the statement finishes, observers get what committed
/// (or, if the transaction is still open, `current` takes it back); the
/// rollback hook drops `current`.
final class HookBroker {
    // MARK: - Configuration

    let capture: ChangeCapture
    private unowned let db: Database
    /// The writer's connection (kept here too: `uninstall()` runs from the database's deinit).
    private let connection: Connection

    // MARK: - Mutable state (the connection's queue only)

    private var observers: [TransactionObserver] = []
    /// Whether an observer needs rowids (the change tracker, while anything is observed).
    var recordsRowIDs = false
    /// Whether an observer needs values (the change log, with the preupdate hook).
    var recordsValues = false
    /// Tables whose inserts may be captured by rowid (rowid tables with no
    /// column named `rowid`), valid at schema generation `byReferenceGeneration`.
    var byReferenceTables: Set<String> = []
    var byReferenceGeneration: Int?

    private var current = CapturedChanges()
    /// Transactions whose commit hook ran, not yet reported.
    private var committing: [CapturedChanges] = []
    /// Open savepoints, innermost last: lower-cased name and `current`'s entry count when it began.
    private var savepoints: [(name: String, mark: Int)] = []
    /// `current.entries.count` when the statement running now began.
    private var statementMark = 0
    /// Whether `current.keepShapes` is reading the schema (its statements
    /// come through the statement callbacks too).
    private var keepingShapes = false

    // The table of the last change, so that a run of changes to one table
    // makes one String.
    private var currentTable: String?
    private var currentTableCString: [CChar] = []
    private var currentTableGeneration: Int?
    private var currentTableByReference = false

    /// For the update-hook capture: what the authorizer needs to know of
    /// each table, read outside the authorizer (which must not run SQL).
    private var facts: [String: TableFacts] = [:]
    private var factsGeneration = -1
    private struct TableFacts {
        var rowIDNames: Set<String>
        var canReplace: Bool
    }
    /// The table a DROP statement being prepared drops: SQLite checks
    /// SQLITE_DELETE on it right after, and SQLITE_IGNORE there would make
    /// the DROP a silent no-op.
    private var droppingTable: [CChar] = []

    /// Installs every hook on the writer. `capture` defaults to the preupdate
    /// hook when the SQLite library has one.
    init(db: Database, capture: ChangeCapture? = nil) {
        self.db = db
        connection = db.connection
        let preupdate = PreupdateHook.install
        self.capture = preupdate == nil ? .updateHook : (capture ?? .best)
        let context = Unmanaged.passUnretained(self).toOpaque()
        let handle = db.connection.handle
        // > The sqlite3_commit_hook() interface registers a callback function
        // > to be invoked whenever a transaction is committed. [...] If the
        // > callback returns non-zero, then the commit is converted into a rollback.
        sqlite3_commit_hook(handle, { context in
            guard let context else { return 0 }
            Unmanaged<HookBroker>.fromOpaque(context).takeUnretainedValue().willCommit()
            return 0
        }, context)
        sqlite3_rollback_hook(handle, { context in
            guard let context else { return }
            Unmanaged<HookBroker>.fromOpaque(context).takeUnretainedValue().didRollback()
        }, context)
        if self.capture == .preupdateHook, let preupdate {
            _ = preupdate(handle, { context, _, operation, database, table, oldRowID, newRowID in
                guard let context, let table, let database, strcmp(database, "main") == 0, HookBroker.isObserved(table) else { return }
                Unmanaged<HookBroker>.fromOpaque(context).takeUnretainedValue()
                    .preupdate(operation: operation, table: table, oldRowID: oldRowID, newRowID: newRowID)
            }, context)
        } else {
            sqlite3_update_hook(handle, { context, operation, _, table, rowID in
                guard let context, let table, HookBroker.isObserved(table) else { return }
                Unmanaged<HookBroker>.fromOpaque(context).takeUnretainedValue().updated(operation: operation, table: table, rowID: rowID)
            }, context)
            db.connection.authorizerDelegate = { [unowned self] action, table, column, notes in
                authorize(action, table, column, &notes)
            }
        }
        db.connection.statementWillRun = { [unowned self] notes in statementWillRun(notes) }
    }

    /// Removes every hook; call before the connection closes.
    func uninstall() {
        let handle = connection.handle
        sqlite3_commit_hook(handle, nil, nil)
        sqlite3_rollback_hook(handle, nil, nil)
        if capture == .preupdateHook, let preupdate = PreupdateHook.install {
            _ = preupdate(handle, nil, nil)
        } else {
            sqlite3_update_hook(handle, nil, nil)
        }
        connection.authorizerDelegate = nil
        connection.statementWillRun = nil
        observers = []
    }

    func add(_ observer: TransactionObserver) {
        observers.append(observer)
    }

    func remove(_ observer: TransactionObserver) {
        observers.removeAll { $0 === observer }
    }

    private var records: Bool { recordsRowIDs || recordsValues }

    // MARK: - Row hooks (no SQL may run here)

    private func table(_ table: UnsafePointer<CChar>) -> String {
        let generation = db.schema.generation
        if let currentTable, currentTableGeneration == generation, strcmp(table, currentTableCString) == 0 { return currentTable }
        let name = String(cString: table)
        currentTable = name
        currentTableCString = Array(name.utf8CString)
        currentTableGeneration = generation
        currentTableByReference = byReferenceGeneration == generation && byReferenceTables.contains(name)
        return name
    }

    private func preupdate(operation: Int32, table cTable: UnsafePointer<CChar>, oldRowID: Int64, newRowID: Int64) {
        if HookBroker.isUnlogged(cTable) { current.noteUnloggedTable() }
        guard records else { return }
        let name = table(cTable)
        // > For an UPDATE or DELETE operation on a rowid table, the sixth
        // > parameter passed to the preupdate callback is the initial rowid
        // > of the row being modified or deleted. For an INSERT or UPDATE
        // > operation on a rowid table, the seventh parameter is the final
        // > rowid value of the row being inserted or updated.
        switch operation {
        case SQLITE_INSERT:
            // With values wanted, an insert into a rowid table is captured by
            // its rowid only: its values are read from the table at commit.
            current.append(.init(table: name, operation: .insert, rowID: newRowID, oldRowID: newRowID, old: nil,
                                 new: recordsValues && !currentTableByReference ? read(PreupdateHook.new) : nil, shape: nil))
        case SQLITE_DELETE:
            let old = recordsValues ? read(PreupdateHook.old) : nil
            if let old { current.settleInsert(table: name, rowID: oldRowID, values: old) }
            current.append(.init(table: name, operation: .delete, rowID: oldRowID, oldRowID: oldRowID, old: old, new: nil, shape: nil))
        default:
            let old = recordsValues ? read(PreupdateHook.old) : nil
            if let old { current.settleInsert(table: name, rowID: oldRowID, values: old) }
            current.append(.init(table: name, operation: .update, rowID: newRowID, oldRowID: oldRowID, old: old,
                                 new: recordsValues ? read(PreupdateHook.new) : nil, shape: nil))
        }
    }

    private func updated(operation: Int32, table cTable: UnsafePointer<CChar>, rowID: Int64) {
        if HookBroker.isUnlogged(cTable) { current.noteUnloggedTable() }
        guard recordsRowIDs else { return }
        let operation: CapturedChanges.Operation = operation == SQLITE_INSERT ? .insert : operation == SQLITE_DELETE ? .delete : .update
        current.append(.init(table: table(cTable), operation: operation, rowID: rowID, oldRowID: rowID, old: nil, new: nil, shape: nil))
    }

    /// The values of the row being changed, before (`PreupdateHook.old`) or after (`.new`) the change.
    private func read(_ reader: PreupdateHook.Read?) -> [SQLiteValue]? {
        guard let reader, let count = PreupdateHook.count else { return nil }
        let handle = db.connection.handle
        let columns = count(handle)
        var values: [SQLiteValue] = []
        values.reserveCapacity(Int(columns))
        for index in 0..<columns {
            var value: OpaquePointer?
            if reader(handle, index, &value) == SQLITE_OK, let value {
                values.append(StatementHandle.value(value))
            } else {
                values.append(.null)
            }
        }
        return values
    }

    // MARK: - Commit and rollback hooks

    private func willCommit() {
        committing.append(current)
        current = CapturedChanges()
        for observer in observers { observer.databaseWillCommit() }
    }

    private func didRollback() {
        // A rollback right after the commit hook is that commit failing.
        if committing.popLast() != nil {
            for observer in observers { observer.databaseCommitDidFail() }
        }
        endTransaction()
        for observer in observers { observer.databaseDidRollback() }
    }

    private func endTransaction() {
        current = CapturedChanges()
        savepoints = []
    }

    // MARK: - Statements

    /// Before `Database.commit()` runs COMMIT: observers write their last.
    /// The first of `observers` of type `T`.
    func observer<T>(of type: T.Type) -> T? {
        observers.lazy.compactMap { $0 as? T }.first
    }

    func didBeginTransaction(_ db: Database) throws {
        for observer in observers { try observer.databaseDidBeginTransaction(db) }
    }

    func willCommitTransaction(_ db: Database) throws {
        for observer in observers { try observer.databaseWillCommitTransaction(db, changes: current) }
    }

    private func statementWillRun(_ notes: StatementNotes) {
        // Not for the statements `keepShapes` runs itself (it is changing `current`).
        guard !keepingShapes else { return }
        statementMark = current.entries.count
        if notes.changesSchema, recordsValues {
            // Read values and columns while the tables still have them (a failure surfaces at commit).
            keepingShapes = true
            defer { keepingShapes = false }
            try? current.keepShapes(db)
        }
        for observer in observers { observer.statementWillRun(notes) }
    }

    /// After every statement of the connection: applies what it did to the
    /// savepoints, and tells observers of the commits that happened in it.
    func statementDidFinish(notes: StatementNotes, succeeded: Bool) {
        guard !keepingShapes else { return }
        if records {
            for table in notes.untrackedTables {
                if committing.isEmpty { current.markUntracked(table) } else { committing[committing.count - 1].markUntracked(table) }
            }
        }
        if succeeded, let effect = notes.transactionEffect { apply(effect) }
        if !succeeded, committing.isEmpty, db.connection.isInTransaction, sqlite3_changes(db.connection.handle) == 0 {
            // A statement that failed inside a transaction was rolled back
            // by its statement journal (ABORT, SQLite's default), and what it
            // did (rows before the failing one, their triggers) never
            // happened. SQLite reports no changes for a statement it rolled
            // back; under ON CONFLICT FAIL the rows changed before the
            // failure stay, and it reports them (when the first row fails
            // under FAIL, changes its BEFORE triggers made are dropped here).
            current.rollBack(to: statementMark)
        }
        guard !committing.isEmpty else { return }
        if db.connection.isInTransaction {
            // COMMIT failed with the transaction still open (SQLITE_BUSY): its changes belong to it again.
            var restored = CapturedChanges()
            for changes in committing { restored.append(contentsOf: changes) }
            restored.append(contentsOf: current)
            current = restored
            committing = []
            for observer in observers { observer.databaseCommitDidFail() }
        } else {
            let committed = committing
            committing = []
            endTransaction()
            for observer in observers { observer.databaseDidCommit(db, changes: committed) }
        }
    }

    private func apply(_ effect: TransactionEffect) {
        switch effect {
        case .beginTransaction:
            savepoints = []
        case .beginSavepoint(let name):
            savepoints.append((name.lowercased(), current.entries.count))
        case .releaseSavepoint(let name):
            // > The RELEASE command starts with the most recent addition to the
            // > transaction stack and releases savepoints backwards in time until
            // > it releases a savepoint with a matching savepoint-name.
            if let index = savepoints.lastIndex(where: { $0.name == name.lowercased() }) {
                savepoints.removeSubrange(index...)
            }
        case .rollbackToSavepoint(let name):
            // > Instead of cancelling the transaction, the ROLLBACK TO command
            // > restarts the transaction again at the beginning. All intervening
            // > SAVEPOINTs are canceled, however.
            if let index = savepoints.lastIndex(where: { $0.name == name.lowercased() }) {
                current.rollBack(to: savepoints[index].mark)
                savepoints.removeSubrange((index + 1)...)
            }
        }
    }

    // MARK: - The update-hook capture's authorizer

    private func authorize(_ action: Int32, _ table: UnsafePointer<CChar>?, _ column: UnsafePointer<CChar>?, _ notes: inout StatementNotes) -> Int32 {
        switch action {
        case SQLITE_DROP_TABLE, SQLITE_DROP_TEMP_TABLE, SQLITE_DROP_VIEW, SQLITE_DROP_TEMP_VIEW:
            droppingTable = table.map { Array(String(cString: $0).utf8CString) } ?? []
            return SQLITE_OK
        case SQLITE_DELETE:
            guard let table else { return SQLITE_OK }
            if !droppingTable.isEmpty, strcmp(table, droppingTable) == 0 {
                droppingTable = []
                return SQLITE_OK
            }
            // > If the action code is SQLITE_DELETE and the callback returns
            // > SQLITE_IGNORE then the DELETE operation proceeds but the truncate
            // > optimization is disabled and all rows are deleted individually.
            return strncmp(table, "sqlite_", 7) == 0 ? SQLITE_OK : SQLITE_IGNORE
        case SQLITE_INSERT, SQLITE_UPDATE:
            guard let table, strncmp(table, "sqlite_", 7) != 0 else { return SQLITE_OK }
            let name = String(cString: table)
            guard let facts = facts[name] else {
                // Not known yet (created in this transaction): assume the worst.
                notes.untrackedTables.append(name)
                return SQLITE_OK
            }
            if facts.canReplace {
                notes.untrackedTables.append(name)
            } else if action == SQLITE_UPDATE, let column, facts.rowIDNames.contains(String(cString: column).lowercased()) {
                notes.untrackedTables.append(name)
            }
            return SQLITE_OK
        default:
            return SQLITE_OK
        }
    }

    /// Before BEGIN: observers choose what is recorded, then the
    /// update-hook capture reads what its authorizer needs.
    func willBegin() {
        for observer in observers { observer.databaseWillBegin() }
        prepareForTransaction()
    }

    /// Before a transaction: reads what the update-hook capture's authorizer
    /// needs of every table (outside the authorizer, before statements are prepared).
    private func prepareForTransaction() {
        guard capture == .updateHook, recordsRowIDs else {
            factsGeneration = -1
            return
        }
        guard factsGeneration != db.schema.generation else { return }
        factsGeneration = db.schema.generation
        facts = [:]
        for name in (try? db.tableNames()) ?? [] {
            guard let info = try? db.tableInfo(name), info.kind == .table else { continue }
            var rowIDNames: Set<String> = ["rowid", "oid", "_rowid_"]
            if info.hasIntegerPrimaryKey { rowIDNames.insert(info.primaryKey[0].lowercased()) }
            facts[info.name] = TableFacts(rowIDNames: rowIDNames, canReplace: info.hasUniqueIndex)
        }
    }
}

// The broker belongs to its connection's queue.
@available(*, unavailable)
extension HookBroker: Sendable {}

// MARK: - Sluice's own tables, as the hooks see their names (``OwnTables``)

extension HookBroker {
    /// Whether the hooks report changes to `table`: the app's tables, and Sluice's own that
    /// live queries observe (`sluice_live_*`).
    static func isObserved(_ table: UnsafePointer<CChar>) -> Bool {
        strncmp(table, "sluice_", 7) != 0 || isUnlogged(table)
    }

    /// Whether `table` is one of Sluice's own that the change log leaves out.
    static func isUnlogged(_ table: UnsafePointer<CChar>) -> Bool {
        strncmp(table, "sluice_live_", 12) == 0
    }
}
