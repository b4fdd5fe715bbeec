import CSQLite

/// Told about every transaction of a writing connection that ends, however
/// it was started: `store.write`, a savepoint's enclosing transaction, a
/// migration, a script with its own `BEGIN ... COMMIT`, or one statement
/// in autocommit mode. GRDB's `TransactionObserver` is the model.
///
/// The calls come on the connection's queue. `databaseWillCommit()` and
/// `databaseDidRollback()` run inside SQLite's commit and rollback hooks,
/// where no SQL may run; `databaseDidCommit(_:)` runs after the statement
/// that committed has finished, and may read.
protocol TransactionObserver: AnyObject {
    /// The transaction is about to be committed by `Database.commit()`
    /// (store writes and migrations): the last moment to write in it. An
    /// error cancels the commit (the caller rolls back).
    func databaseWillCommitTransaction(_ db: Database) throws
    /// `Database.savepoint` began a savepoint.
    func databaseDidBeginSavepoint()
    /// `Database.savepoint` released its savepoint (`rolledBack`: after
    /// undoing its changes with `ROLLBACK TO`).
    func databaseDidEndSavepoint(rolledBack: Bool)
    /// The transaction is about to commit (SQLite's commit hook).
    func databaseWillCommit()
    /// The commit announced by `databaseWillCommit()` failed and the
    /// transaction is still open (`SQLITE_BUSY` on COMMIT): its changes
    /// belong to the transaction again.
    func databaseCommitDidFail()
    /// The transaction committed.
    func databaseDidCommit(_ db: Database)
    /// The transaction rolled back (SQLite's rollback hook): an explicit
    /// ROLLBACK, a failed COMMIT, or an error that ended the transaction.
    /// `ROLLBACK TO SAVEPOINT` does not end the transaction.
    func databaseDidRollback()
    /// A statement ran whose row changes the hooks may not fully report
    /// (noted by the authorizer when it was prepared); `committed` says
    /// whether that statement also committed (autocommit mode).
    func databaseDidChange(untrackedTables tables: [String], committed: Bool)
}

extension TransactionObserver {
    func databaseWillCommitTransaction(_ db: Database) throws {}
    func databaseDidBeginSavepoint() {}
    func databaseDidEndSavepoint(rolledBack: Bool) {}
}

/// The one transaction path of a writing `Database`: SQLite's commit and
/// rollback hooks, and the check after every statement.
final class TransactionPath {
    private var observers: [TransactionObserver] = []
    /// Commit hooks seen since the last statement finished.
    private var commitsAnnounced = 0
    private unowned let connection: Connection

    init(connection: Connection) {
        self.connection = connection
        let context = Unmanaged.passUnretained(self).toOpaque()
        // > The sqlite3_commit_hook() interface registers a callback function
        // > to be invoked whenever a transaction is committed. [...] If the
        // > callback returns non-zero, then the commit is converted into a rollback.
        sqlite3_commit_hook(connection.handle, { context in
            guard let context else { return 0 }
            Unmanaged<TransactionPath>.fromOpaque(context).takeUnretainedValue().willCommit()
            return 0
        }, context)
        sqlite3_rollback_hook(connection.handle, { context in
            guard let context else { return }
            Unmanaged<TransactionPath>.fromOpaque(context).takeUnretainedValue().didRollback()
        }, context)
    }

    /// Removes the hooks; call before the connection closes.
    func uninstall() {
        sqlite3_commit_hook(connection.handle, nil, nil)
        sqlite3_rollback_hook(connection.handle, nil, nil)
        observers = []
    }

    func add(_ observer: TransactionObserver) {
        observers.append(observer)
    }

    func remove(_ observer: TransactionObserver) {
        observers.removeAll { $0 === observer }
    }

    func willCommitTransaction(_ db: Database) throws {
        for observer in observers { try observer.databaseWillCommitTransaction(db) }
    }

    func didBeginSavepoint() {
        for observer in observers { observer.databaseDidBeginSavepoint() }
    }

    func didEndSavepoint(rolledBack: Bool) {
        for observer in observers { observer.databaseDidEndSavepoint(rolledBack: rolledBack) }
    }

    private func willCommit() {
        commitsAnnounced += 1
        for observer in observers { observer.databaseWillCommit() }
    }

    private func didRollback() {
        // A rollback right after the commit hook is that commit failing.
        if commitsAnnounced > 0 { commitsAnnounced -= 1 }
        for observer in observers { observer.databaseDidRollback() }
    }

    /// After every statement of the connection: tells observers of the
    /// commits that happened in it.
    func statementDidFinish(_ db: Database, notes: StatementNotes) {
        if !notes.untrackedTables.isEmpty {
            for observer in observers { observer.databaseDidChange(untrackedTables: notes.untrackedTables, committed: commitsAnnounced > 0) }
        }
        guard commitsAnnounced > 0 else { return }
        commitsAnnounced = 0
        if connection.isInTransaction {
            // COMMIT failed with the transaction still open (SQLITE_BUSY).
            for observer in observers { observer.databaseCommitDidFail() }
        } else {
            for observer in observers { observer.databaseDidCommit(db) }
        }
    }
}

// A transaction path belongs to its connection's queue.
@available(*, unavailable)
extension TransactionPath: Sendable {}
