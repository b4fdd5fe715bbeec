import CSQLite
import Foundation

/// A raw SQLite connection handle.
typealias SQLiteConnection = OpaquePointer

/// How a connection opens its file.
enum OpenMode {
    /// Read and write; create the file if it is missing.
    case create
    /// Read and write an existing file only.
    case readWrite
    /// Read an existing file only.
    case readOnly
}

/// One SQLite connection, with its prepared-statement cache.
///
/// A connection is used by one serial queue at a time (the store's writer or
/// reader queue); it is not thread-safe by itself.
@usableFromInline
final class Connection {
    let handle: SQLiteConnection
    let path: String
    private var statementCache: [String: Statement] = [:]
    /// How long to retry a lock held by another connection, in milliseconds.
    let busyTimeout: Int32

    /// What the authorizer noticed while statements were prepared (or while
    /// a script ran): see `StatementNotes`.
    private var notes = StatementNotes()
    /// Asked about each action SQLite authorizes, after the connection's
    /// own bookkeeping: the change tracker uses it to see what a statement
    /// may do that its hooks do not report. Returns SQLITE_OK, SQLITE_IGNORE
    /// or SQLITE_DENY.
    var authorizerDelegate: ((_ action: Int32, _ table: UnsafePointer<CChar>?, _ column: UnsafePointer<CChar>?, _ notes: inout StatementNotes) -> Int32)?
    /// Called after every statement finishes (stepped to its end, failed,
    /// or a script ran), with what its preparation noted: the transaction
    /// path and the schema cache hang off this.
    var statementDidFinish: ((_ notes: StatementNotes, _ succeeded: Bool) -> Void)?
    /// Called before a statement's first step, with what its preparation noted.
    var statementWillRun: ((StatementNotes) -> Void)?
    /// A column that reads as NULL in this connection's statements: the
    /// change log's foreign-writer triggers' guard, set on Sluice's writers,
    /// which log by themselves (the log names it, this layer does not).
    var silencedColumn: (table: String, column: String)?
    /// When set, decides instead of the busy timeout whether to try again a
    /// lock another connection holds, and pauses as long as it likes (called
    /// with the attempts so far): the observation queue's RESTART checkpoint
    /// re-pins its own snapshots while it waits for readers.
    var busyOverride: ((Int32) -> Bool)?
    /// Called after each of this connection's commits with the frames the WAL then holds,
    /// once `installWALHook()` ran (see Connection+WALHook.swift).
    var walCommitted: ((_ frames: Int32) -> Void)?

    init(path: String, mode: OpenMode, busyTimeout: Int32 = 5_000) throws {
        self.path = path
        self.busyTimeout = busyTimeout
        var flags: Int32 = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        switch mode {
        case .create: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        case .readWrite: flags |= SQLITE_OPEN_READWRITE
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        }
        var db: SQLiteConnection?
        let code = sqlite3_open_v2(path, &db, flags, nil)
        guard code == SQLITE_OK, let db else {
            // > Whether or not an error occurs when it is opened, resources
            // > associated with the database connection handle should be
            // > released by passing it to sqlite3_close() when it is no longer required.
            var error = StoreError(sqliteCode: code, db: db)
            error.message = "cannot open database at \(path): \(error.message)"
            sqlite3_close_v2(db)
            throw error
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        // SQLite's own busy timeout backs off to 100 ms sleeps, and a writer
        // waiting that way almost never catches the short gap between
        // another process's transactions: it starves, then fails with
        // SQLITE_BUSY. Retrying every half millisecond until the timeout
        // finds the gap (the many-processes test showed the difference).
        sqlite3_busy_handler(db, { context, attempts in
            guard let context else { return 0 }
            let connection = Unmanaged<Connection>.fromOpaque(context).takeUnretainedValue()
            if let busyOverride = connection.busyOverride { return busyOverride(attempts) ? 1 : 0 }
            guard Int64(attempts) * Int64(Connection.busyRetryMicroseconds) < Int64(connection.busyTimeout) * 1000 else { return 0 }
            usleep(Connection.busyRetryMicroseconds)
            return 1
        }, Unmanaged.passUnretained(self).toOpaque())
        do {
            // sqlite3_open_v2 is lazy: a file that is not a database is only
            // found out on the first read. Read the header before any pragma
            // that could write, so such a file is left exactly as it was.
            _ = try scalarInt(sql: "PRAGMA schema_version")
        } catch var error as StoreError {
            statementCache.removeAll()
            sqlite3_close_v2(db)
            if error.code == .notADatabase {
                error.message = "\(path) is not an SQLite database (\(error.message))"
            }
            throw error
        }
        registerFunctions()
        // > The authorizer callback is invoked as SQL statements are being
        // > compiled by sqlite3_prepare() or its variants.
        sqlite3_set_authorizer(db, { context, action, first, second, _, _ in
            guard let context else { return SQLITE_OK }
            return Unmanaged<Connection>.fromOpaque(context).takeUnretainedValue().authorize(action, first, second)
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    private func authorize(_ action: Int32, _ first: UnsafePointer<CChar>?, _ second: UnsafePointer<CChar>?) -> Int32 {
        switch action {
        // Temporary triggers (the change log's fallback capture) change no table's shape.
        case SQLITE_CREATE_INDEX, SQLITE_CREATE_TABLE, SQLITE_CREATE_TEMP_INDEX, SQLITE_CREATE_TEMP_TABLE,
             SQLITE_CREATE_TEMP_VIEW, SQLITE_CREATE_TRIGGER, SQLITE_CREATE_VIEW,
             SQLITE_DROP_INDEX, SQLITE_DROP_TABLE, SQLITE_DROP_TEMP_INDEX, SQLITE_DROP_TEMP_TABLE,
             SQLITE_DROP_TEMP_VIEW, SQLITE_DROP_TRIGGER, SQLITE_DROP_VIEW,
             SQLITE_ALTER_TABLE, SQLITE_CREATE_VTABLE, SQLITE_DROP_VTABLE:
            notes.changesSchema = true
        case SQLITE_SAVEPOINT:
            // > ... the 3rd parameter is the operation ("BEGIN", "RELEASE" or
            // > "ROLLBACK") and the 4th the name of the savepoint.
            if let first, let second {
                let name = String(cString: second)
                switch String(cString: first) {
                case "BEGIN": notes.transactionEffect = .beginSavepoint(name)
                case "RELEASE": notes.transactionEffect = .releaseSavepoint(name)
                case "ROLLBACK": notes.transactionEffect = .rollbackToSavepoint(name)
                default: break
                }
            }
        case SQLITE_TRANSACTION:
            if let first, strcmp(first, "BEGIN") == 0 { notes.transactionEffect = .beginTransaction }
        case SQLITE_READ where silencedColumn != nil:
            // > If the action code is SQLITE_READ and the callback returns
            // > SQLITE_IGNORE then the prepared statement statement is constructed
            // > to substitute a NULL value in place of the table column that would
            // > have been read if SQLITE_OK had been returned.
            if let first, let second, let silenced = silencedColumn,
               silenced.table.withCString({ strcmp(first, $0) }) == 0, silenced.column.withCString({ strcmp(second, $0) }) == 0 {
                return SQLITE_IGNORE
            }
        default:
            break
        }
        guard let authorizerDelegate else { return SQLITE_OK }
        return authorizerDelegate(action, first, second, &notes)
    }

    /// Starts collecting notes for a statement about to be prepared.
    func beginNotes() -> StatementNotes {
        defer { notes = StatementNotes() }
        return notes
    }

    /// The notes collected since `beginNotes()`, restoring what was being
    /// collected before (a statement can be prepared while a script runs).
    func endNotes(restoring outer: StatementNotes) -> StatementNotes {
        defer { notes = outer }
        return notes
    }

    /// Tells the connection's listeners that a statement is about to run
    /// (its first step): the change log's trigger capture hangs off this.
    func willRun(_ statementNotes: StatementNotes) {
        statementWillRun?(statementNotes)
    }

    /// Tells the connection's listeners that a statement finished
    /// (`succeeded`: it ran to its end; false: it failed).
    func finished(_ statementNotes: StatementNotes, succeeded: Bool) {
        statementDidFinish?(statementNotes, succeeded)
    }

    /// The pause between two attempts to take a lock another connection holds.
    static let busyRetryMicroseconds: UInt32 = 500

    deinit {
        statementCache.removeAll()
        sqlite3_set_authorizer(handle, nil, nil)
        sqlite3_busy_handler(handle, nil, nil)
        if walCommitted != nil { sqlite3_wal_hook(handle, nil, nil) }
        sqlite3_close_v2(handle)
    }

    // MARK: - Executing

    /// Runs one or more statements without results (a migration script, a
    /// pragma), one at a time: each is prepared, announced, stepped to its
    /// end and finished, as a single statement would be.
    func execute(script sql: String) throws {
        try sql.withCString { start in
            var next: UnsafePointer<CChar>? = start
            while let current = next, current.pointee != 0 {
                var handle: SQLiteStatement?
                var tail: UnsafePointer<CChar>?
                let outer = beginNotes()
                let prepared = sqlite3_prepare_v2(self.handle, current, -1, &handle, &tail)
                let statementNotes = endNotes(restoring: outer)
                let text = tail.map { String(decoding: UnsafeRawBufferPointer(start: current, count: $0 - current), as: UTF8.self) } ?? String(cString: current)
                guard prepared == SQLITE_OK else { throw StoreError(sqliteCode: prepared, db: self.handle, sql: text) }
                next = tail
                guard let handle else { continue }    // only whitespace or a comment
                defer { sqlite3_finalize(handle) }
                willRun(statementNotes)
                var code = sqlite3_step(handle)
                while code == SQLITE_ROW { code = sqlite3_step(handle) }
                guard code == SQLITE_DONE else {
                    let error = StoreError(sqliteCode: code, db: self.handle, sql: text)
                    sqlite3_reset(handle)
                    finished(statementNotes, succeeded: false)
                    throw error
                }
                finished(statementNotes, succeeded: true)
            }
        }
    }

    /// Runs one statement with arguments, discarding rows.
    func execute(sql: String, arguments: [SQLiteValue] = []) throws {
        let statement = try cachedStatement(sql: sql)
        defer { statement.reset() }
        try statement.bind(arguments)
        while try statement.step() {}
    }

    /// The first column of the first row, as an integer.
    func scalarInt(sql: String) throws -> Int64? {
        let statement = try cachedStatement(sql: sql)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return Int64(sqliteValue: statement.value(at: 0))
    }

    // MARK: - Statements

    /// Prepares a statement that the caller owns.
    func prepare(sql: String) throws -> Statement {
        try Statement(connection: self, sql: sql)
    }

    /// A prepared statement from the cache, reset and with no bindings.
    @usableFromInline
    func cachedStatement(sql: String) throws -> Statement {
        if let statement = statementCache[sql] {
            return statement
        }
        let statement = try prepare(sql: sql)
        statementCache[sql] = statement
        return statement
    }

    // MARK: - State

    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    var changes: Int { Int(sqlite3_changes(handle)) }
    var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Whether the file this connection has open is no longer the one at
    /// its path (renamed over, or deleted), so what it writes no one will
    /// read. One `stat` of the path.
    ///
    /// > SQLITE_FCNTL_HAS_MOVED: [...] interprets its argument as a pointer
    /// > to an integer and it writes a boolean into that integer depending on
    /// > whether or not the file has been renamed, moved, or deleted since it
    /// > was first opened.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/c3ref/c_fcntl_begin_atomic_write.html>
    var hasMoved: Bool {
        var moved: Int32 = 0
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK else { return false }
        return moved != 0
    }

    // MARK: - Functions

    /// Registers `sluice_lower(text)`, the Unicode-aware lower-casing used by
    /// case-insensitive filters (`[c]`). SQLite's own `lower()` folds ASCII only.
    private func registerFunctions() {
        sqlite3_create_function_v2(
            handle, "sluice_lower", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil,
            { context, argc, argv in
                guard argc == 1, let argv, let value = argv[0] else { return }
                guard sqlite3_value_type(value) == SQLITE_TEXT, let text = sqlite3_value_text(value) else {
                    sqlite3_result_value(context, value)
                    return
                }
                let count = Int(sqlite3_value_bytes(value))
                let string = String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
                let lowered = string.lowercased()
                var utf8 = Array(lowered.utf8)
                utf8.withUnsafeMutableBufferPointer { buffer in
                    buffer.withMemoryRebound(to: CChar.self) { chars in
                        sqlite3_result_text(context, chars.baseAddress, Int32(chars.count), _sluice_transient())
                    }
                }
            }, nil, nil, nil)
        // A live search ranked by relevance scores rows from bm25's parts;
        // without FTS5 there is no index to search, and nothing to register.
        _ = _sluice_register_bm25_parts(handle)
    }
}

/// What the authorizer noticed about a statement when it was prepared.
struct StatementNotes {
    /// It creates, drops or alters a table, index, view or trigger.
    var changesSchema = false
    /// Tables whose row changes the hooks may not fully report (the change
    /// tracker's fallback without the preupdate hook fills this in).
    var untrackedTables: [String] = []
    /// What it does to the transaction or its savepoints, if anything
    /// (`COMMIT` and `ROLLBACK` are seen by the commit and rollback hooks).
    var transactionEffect: TransactionEffect?

    var isEmpty: Bool { !changesSchema && untrackedTables.isEmpty }
}

/// What a statement does to the transaction, as the authorizer reports it
/// (`SQLITE_TRANSACTION`, `SQLITE_SAVEPOINT`). Savepoint names are compared
/// case-insensitively, as SQLite does.
///
/// Related SQLite documentation: <https://www.sqlite.org/lang_savepoint.html>
enum TransactionEffect: Equatable {
    case beginTransaction
    case beginSavepoint(String)
    case releaseSavepoint(String)
    case rollbackToSavepoint(String)
}

// Connections are used only on their store's serial queues.
@available(*, unavailable)
extension Connection: Sendable {}
