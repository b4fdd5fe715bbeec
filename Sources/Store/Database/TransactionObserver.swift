import Foundation

/// How a writing connection captures its row changes.
enum ChangeCapture: Sendable {
    /// SQLite's preupdate hook, when the library has it (Debian's does;
    /// Apple's may not): every row change, with the old and new rowid of an
    /// UPDATE, rows deleted by `REPLACE` and by cascades, and their values.
    case preupdateHook
    /// The update hook, which reports an UPDATE under its new rowid only and
    /// never reports rows that `REPLACE` deletes. The authorizer makes up for
    /// it: a statement that can change a rowid or replace rows marks its
    /// table untracked, so observers re-read it; and `DELETE FROM t` is kept
    /// from skipping the hook.
    case updateHook

    /// The preupdate hook when the SQLite library has one, else the update hook.
    static var best: ChangeCapture { PreupdateHook.install == nil ? .updateHook : .preupdateHook }
}

/// Told about every transaction of a writing connection, however it was
/// started: `store.write`, a migration, a script with its own `BEGIN ...
/// COMMIT`, or one statement in autocommit mode. GRDB's
/// `TransactionObserver` is the model.
///
/// The calls come on the connection's queue. `databaseWillCommit()` and
/// `databaseDidRollback()` run inside SQLite's commit and rollback hooks,
/// where no SQL may run; `databaseDidCommit(_:changes:)` runs after the
/// statement that committed has finished, and may read.
protocol TransactionObserver: AnyObject {
    /// The transaction is about to be committed by `Database.commit()`
    /// (store writes and migrations), with what it changed: the last moment
    /// to write in it. An error cancels the commit (the caller rolls back).
    func databaseWillCommitTransaction(_ db: Database, changes: CapturedChanges) throws
    /// A transaction is about to begin (before BEGIN runs): the last moment
    /// to choose what the broker records in it.
    func databaseWillBegin()
    /// `Database.inTransaction` (store writes and migrations) began its
    /// transaction: the write lock is held, nothing is written yet. An
    /// error rolls it back.
    func databaseDidBeginTransaction(_ db: Database) throws
    /// A statement is about to run (its first step).
    func statementWillRun(_ notes: StatementNotes)
    /// The transaction is about to commit (SQLite's commit hook).
    func databaseWillCommit()
    /// The commit announced by `databaseWillCommit()` failed: the
    /// transaction is still open (`SQLITE_BUSY` on COMMIT) or rolled back
    /// (then `databaseDidRollback()` follows).
    func databaseCommitDidFail()
    /// One or more transactions committed in the statement that just
    /// finished, with what each changed.
    func databaseDidCommit(_ db: Database, changes: [CapturedChanges])
    /// The transaction rolled back: an explicit ROLLBACK, a failed COMMIT,
    /// or an error that ended the transaction. `ROLLBACK TO SAVEPOINT` does
    /// not end the transaction (the broker removes what it undid).
    func databaseDidRollback()
}

extension TransactionObserver {
    func databaseWillCommitTransaction(_ db: Database, changes: CapturedChanges) throws {}
    func databaseWillBegin() {}
    func databaseDidBeginTransaction(_ db: Database) throws {}
    func statementWillRun(_ notes: StatementNotes) {}
    func databaseWillCommit() {}
    func databaseCommitDidFail() {}
    func databaseDidRollback() {}
}
