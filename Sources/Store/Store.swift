import Dispatch
import Foundation

/// A Sluice store: one SQLite file, one serialized writer, and a reader that
/// runs while a write is in progress (WAL mode).
///
/// ```swift
/// let store = try Store(path: "app.sqlite", migrations: migrations)
/// let zoe = try store.write { tx in
///     try tx.insert(Person(firstName: "Zoë", lastName: "Ng"))
/// }
/// let everyone = try store.read { db in try db.fetchAll(Person.self) }
/// ```
///
/// A `Store` is Sendable: call it from any thread. Writes run one at a time
/// on the writer's queue; reads run on the reader's queue and see the last
/// committed state.
public final class Store: @unchecked Sendable {
    // @unchecked Sendable because each connection is only touched on its own
    // serial queue (writerQueue, readerQueue), and `reader` is created there.

    /// The database file's path (for `":memory:"`, the private file made for it).
    public let path: String
    /// The file the store opened at `path`.
    private let file: OpenedFile
    /// The folder of an in-memory store's file, removed with the store.
    private let temporaryFolder: URL?

    /// The version of the SQLite library Sluice runs on (`3.40.1`).
    public static var sqliteVersion: String { Connection.libraryVersion }
    /// How the store was opened.
    public let configuration: Configuration

    private let writerQueue: DispatchQueue
    private let readerQueue: DispatchQueue
    private let writerKey = DispatchSpecificKey<Bool>()
    private let readerKey = DispatchSpecificKey<Bool>()
    private let writer: Database?
    private var reader: Database?
    /// Records the writer's changes (writer queue only).
    private let tracker: ChangeTracker?
    /// The writer's checkpoints, on a queue of their own (nil when read-only).
    private let checkpoint: BackgroundCheckpoint?
    /// Writes the change log (writer queue only).
    let logWriter: LogWriter?
    /// Commits since retention last ran (writer queue only).
    private var commitsSincePruning = 0
    /// Runs observations on their own queue and read connections; its
    /// `ExternalCommits` hears other connections' and processes' commits.
    let observationCenter: ObservationCenter

    /// Opens (or creates) the database at `path`.
    ///
    /// `":memory:"` opens a new, private database that lives only as long as
    /// the store (Realm's in-memory configuration): Sluice's writer and readers
    /// are separate connections sharing snapshots through WAL, which SQLite's
    /// in-memory databases cannot do, so it is a file in a temporary folder
    /// of its own, removed when the store is released.
    ///
    /// - Throws: `StoreError` with `.cannotOpen` when the file cannot be
    ///   opened, `.notADatabase` when it is not an SQLite database (the file
    ///   is left untouched).
    ///
    /// - Parameters:
    ///   - path: the database file (created when missing), or `":memory:"`.
    ///   - configuration: how to open it (busy timeout, read-only, history retention).
    public convenience init(path: String, configuration: Configuration = Configuration()) throws {
        try self.init(path: path, configuration: configuration, capture: nil)
    }

    /// Opens the store, choosing how the writer's changes are captured
    /// (tests run both ways; by default, the preupdate hook when SQLite has it).
    init(path requested: String, configuration: Configuration, capture: ChangeCapture?) throws {
        let path: String
        if requested == ":memory:" {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-memory-\(UUID().uuidString)")
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            } catch {
                throw StoreError(code: .cannotOpen, message: "cannot make a folder for an in-memory store at \(folder.path): \(error.localizedDescription)")
            }
            temporaryFolder = folder
            path = folder.appendingPathComponent("memory.sqlite").path
        } else {
            temporaryFolder = nil
            path = requested
        }
        self.path = path
        self.configuration = configuration
        writerQueue = DispatchQueue(label: "sluice.writer")
        readerQueue = DispatchQueue(label: "sluice.reader")
        writerQueue.setSpecific(key: writerKey, value: true)
        readerQueue.setSpecific(key: readerKey, value: true)
        let file = OpenedFile(path: path)
        self.file = file
        let commits = ExternalCommits(file: file) {
            try? Self.openReader(path: path, configuration: configuration, file: file).connection
        }
        observationCenter = ObservationCenter(commits: commits) {
            try Self.openReader(path: path, configuration: configuration, file: file)
        }

        if configuration.readOnly {
            writer = nil
            tracker = nil
            checkpoint = nil
            logWriter = nil
            reader = try Self.openReader(path: path, configuration: configuration, file: file)
            file.noteOpened()
        } else {
            if !configuration.createIfMissing, !FileManager.default.fileExists(atPath: path) {
                throw StoreError(code: .cannotOpen, message: "no database at \(path)")
            }
            let connection = try Connection(path: path, mode: configuration.createIfMissing ? .create : .readWrite,
                                            busyTimeout: configuration.busyTimeoutMilliseconds)
            file.noteOpened()
            // WAL lets the reader run while the writer writes.
            let mode = try connection.prepare(sql: "PRAGMA journal_mode = WAL")
            let journal = try mode.step() ? String(sqliteValue: mode.value(at: 0)) : nil
            mode.reset()
            guard journal?.lowercased() == "wal" else {
                throw StoreError(code: .cannotOpen, message: "cannot switch \(path) to WAL mode (journal mode is \(journal ?? "unknown"))")
            }
            try connection.execute(script: "PRAGMA foreign_keys = ON; PRAGMA synchronous = \(configuration.synchronous.rawValue); PRAGMA cache_size = -\(max(configuration.writerCacheKiB, 1))")
            let checkpoint = BackgroundCheckpoint { [configuration] in
                let connection = try Self.openConnection(path: path, configuration: configuration, file: file)
                try connection.execute(script: "PRAGMA synchronous = \(configuration.synchronous.rawValue)")
                return connection
            }
            checkpoint.install(on: connection)
            self.checkpoint = checkpoint
            let writer = Database(connection: connection, isReadOnly: false, capture: capture)
            guard let broker = writer.broker else { throw StoreError(code: .internal, message: "the writer of \(path) has no hook broker") }
            self.writer = writer
            tracker = ChangeTracker(db: writer, broker: broker, commits: commits, listener: observationCenter)
            if configuration.logsChanges {
                if try !ChangeLog.exists(writer) || !ChangeLog.isCurrent(writer) { try writer.inTransaction { try ChangeLog.create(writer) } }
                logWriter = LogWriter(db: writer, broker: broker, foreignBoundaries: commits.foreignBoundaries)
            } else {
                logWriter = nil
            }
        }
        if logWriter != nil {
            // Another writer's ALTER TABLE on a tracked table: its triggers
            // are installed again with the columns of now.
            let queue = writerQueue
            observationCenter.schemaChangedElsewhere = { [weak self] in
                queue.async { [weak self] in self?.refreshForeignTriggers() }
            }
        }
    }

    /// On the writer's queue: installs again the triggers of tracked tables
    /// whose columns changed (`ForeignTracking.outdatedTables`).
    private func refreshForeignTriggers() {
        guard let writer, (try? ForeignTracking.outdatedTables(writer))?.isEmpty == false else { return }
        _ = try? writer.inTransaction { try ForeignTracking.refreshOutdated(writer) }
    }

    deinit {
        tracker?.uninstall()
        logWriter?.uninstall()
        checkpoint?.finish()
        // Open connections keep an unlinked file readable until they close.
        if let temporaryFolder { try? FileManager.default.removeItem(at: temporaryFolder) }
    }


    /// Opens the database and applies pending migrations.
    ///
    /// - Throws: as `init(path:configuration:)`, and `.migration` or
    ///   `.databaseTooNew` from `migrate(_:)`.
    ///
    /// - Parameters:
    ///   - path: the database file (created when missing), or `":memory:"`.
    ///   - migrations: every migration of the app, in any order; those not yet applied run.
    ///   - configuration: how to open it.
    public convenience init(path: String, migrations: [Migration], configuration: Configuration = Configuration()) throws {
        try self.init(path: path, configuration: configuration)
        try migrate(migrations)
    }

    /// Opens a connection besides the writer (a reader's, a checkpoint's), unless the file at
    /// the path is no longer the store's (`OpenedFile`).
    private static func openConnection(path: String, configuration: Configuration, file: OpenedFile) throws -> Connection {
        try file.check()
        return try Connection(path: path, mode: .readWrite, busyTimeout: configuration.busyTimeoutMilliseconds)
    }

    /// Opens a read connection, unless the file at the path is no longer the store's.
    private static func openReader(path: String, configuration: Configuration, file: OpenedFile) throws -> Database {
        let connection = try openConnection(path: path, configuration: configuration, file: file)
        try connection.execute(script: "PRAGMA query_only = 1")
        return Database(connection: connection, isReadOnly: true)
    }

    // MARK: - Transactions

    /// Runs `body` in a write transaction on the store's one writer.
    ///
    /// The transaction commits when `body` returns and rolls back when it
    /// throws; the error is rethrown. Writes from all threads run one at a
    /// time, in call order per thread. After a commit, every live query and
    /// observed object it changed is notified once, in commit order; a
    /// rolled-back transaction notifies nothing.
    ///
    /// Nesting: calling `write` from inside a `write` closure runs the inner
    /// body in a savepoint of the same transaction. If the inner body throws,
    /// only its changes are undone and the error reaches the outer body, which
    /// may catch it and go on; nothing is committed until the outer body returns.
    ///
    /// This blocks the calling thread until the writer is free and the
    /// transaction is done; from the main actor, prefer `await store.write`.
    ///
    /// - Throws: what `body` throws, or `StoreError` when SQLite fails
    ///   (`.busy` after the busy timeout, `.constraint`, `.full`, ...).
    ///
    /// - Parameter body: the transaction's work, on the writer's `Database`.
    /// - Returns: what `body` returned.
    @discardableResult
    public func write<T>(_ body: (Database) throws -> T) throws -> T {
        try write(withoutNotifying: [], body)
    }

    /// Runs `body` in a write transaction without blocking the calling
    /// thread: the task waits for the writer, the thread does not.
    ///
    /// ```swift
    /// let saved = try await store.write { tx in try tx.insert(person) }
    /// ```
    ///
    /// - Throws: as `write(_:)`.
    ///
    /// - Parameter body: the transaction's work, on the writer's `Database`.
    /// - Returns: what `body` returned.
    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        guard writer != nil else { throw readOnlyError() }
        return try await withCheckedThrowingContinuation { continuation in
            writerQueue.async {
                continuation.resume(with: Result {
                    guard let writer = self.writer else { throw self.readOnlyError() }
                    return try self.transaction(writer, silenced: [], body)
                })
            }
        }
    }

    /// Runs a write transaction whose changes are not delivered to the
    /// observations of `tokens` (as Realm's `write(withoutNotifying:)`): for
    /// a change the UI made itself and has already shown. Their state still
    /// follows the commit, so the next changeset they get starts from it.
    ///
    /// To keep that commit apart from others, this waits for the observation
    /// queue to process earlier commits and this one.
    ///
    /// Called inside a `write` closure, it runs `body` in a savepoint, and
    /// the tokens are not notified of the enclosing transaction (the one
    /// commit that carries `body`'s changes), unless `body` throws.
    ///
    /// - Parameters:
    ///   - tokens: the observations not to notify of this commit.
    ///   - body: the transaction's work.
    /// - Returns: what `body` returned.
    /// - Throws: as `write(_:)`.
    @discardableResult
    public func write<T>(withoutNotifying tokens: [ObservationToken], _ body: (Database) throws -> T) throws -> T {
        guard let writer else { throw readOnlyError() }
        let silenced = Set(tokens.compactMap(\.observationID))
        if DispatchQueue.getSpecific(key: writerKey) == true {
            guard let tracker, !silenced.isSubset(of: tracker.silenced) else { return try writer.savepoint(body) }
            let enclosing = tracker.silenced
            tracker.silenced.formUnion(silenced)
            do {
                return try writer.savepoint(body)
            } catch {
                tracker.silenced = enclosing
                throw error
            }
        }
        if !silenced.isEmpty { observationCenter.drain() }
        let result: T = try writerQueue.sync { try transaction(writer, silenced: silenced, body) }
        if !silenced.isEmpty { observationCenter.drain() }
        return result
    }

    /// Runs a write transaction and returns, with `body`'s result, the
    /// sequence number its change-log entry got (nil when it logged nothing).
    func writeLogged<T>(_ body: (Database) throws -> T) throws -> (T, Int64?) {
        guard let writer else { throw readOnlyError() }
        guard DispatchQueue.getSpecific(key: writerKey) != true else {
            throw StoreError(code: .invalidUse, message: "this call makes a transaction of its own; it cannot run inside a write closure")
        }
        return try writerQueue.sync {
            let before = logWriter?.lastSequence
            let result = try transaction(writer, silenced: [], body)
            let after = logWriter?.lastSequence
            return (result, after != before ? after : nil)
        }
    }

    /// Applies the retention policy now, on the writer's queue: removes
    /// up to `HistoryPruner.batch` old transactions per call; returns how many.
    ///
    /// - Returns: how many transactions were removed.
    /// - Throws: `StoreError` when the log cannot be written.
    /// - Complexity: O(b + c) for a batch of b transactions with c changed rows.
    @discardableResult
    public func pruneHistory() throws -> Int {
        guard let writer else { throw readOnlyError() }
        return try writerQueue.sync { try HistoryPruner(retention: configuration.historyRetention).prune(writer) }
    }

    private func readOnlyError() -> StoreError {
        StoreError(code: .readOnly, message: "the store at \(path) was opened read-only")
    }

    /// On the writer queue: BEGIN, body, COMMIT (or ROLLBACK). The commit
    /// reaches observers through the transaction path, as every commit does.
    private func transaction<T>(_ writer: Database, silenced: Set<ObjectIdentifier>, _ body: (Database) throws -> T) throws -> T {
        tracker?.silenced = silenced
        defer { tracker?.silenced = [] }
        let result = try writer.inTransaction(author: configuration.author) { try body(writer) }
        commitsSincePruning += 1
        if commitsSincePruning >= Self.pruningInterval {
            commitsSincePruning = 0
            _ = try? HistoryPruner(retention: configuration.historyRetention).prune(writer)
        }
        return result
    }

    /// Commits between two looks at the retention policy.
    static let pruningInterval = 64

    /// Runs `body` in a read transaction: it sees one consistent snapshot of
    /// the last committed state, and does not wait for a write in progress.
    ///
    /// Called from inside a `write` closure, it still reads the committed
    /// state, not the enclosing transaction's uncommitted changes (use the
    /// `tx` handle for those).
    ///
    /// - Parameter body: reads the snapshot; it must not keep the `Database`.
    /// - Returns: what `body` returned.
    /// - Throws: what `body` throws, or `StoreError` when the read transaction
    ///   cannot start (`.cannotOpen`).
    public func read<T>(_ body: (Database) throws -> T) throws -> T {
        if DispatchQueue.getSpecific(key: readerKey) == true, let reader {
            return try body(reader)
        }
        return try readerQueue.sync { try readTransaction(body) }
    }

    /// Runs `body` in a read transaction without blocking the calling thread.
    ///
    /// - Parameter body: reads the snapshot; it must not keep the `Database`.
    /// - Returns: what `body` returned.
    /// - Throws: as `read(_:)`.
    public func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            readerQueue.async {
                continuation.resume(with: Result { try self.readTransaction(body) })
            }
        }
    }

    var isOnReaderQueue: Bool { DispatchQueue.getSpecific(key: readerKey) == true }

    /// On the reader queue: `body` in a read transaction on the reader.
    private func readTransaction<T>(_ body: (Database) throws -> T) throws -> T {
        let db = try readerConnection()
        try db.begin(immediate: false)
        db.refreshSchemaIfChanged()
        defer { db.rollback() }
        return try body(db)
    }

    /// The reader, opened on first use (reader queue only).
    private func readerConnection() throws -> Database {
        if let reader { return reader }
        let db = try Self.openReader(path: path, configuration: configuration, file: file)
        reader = db
        return db
    }

    /// Runs the migrations of a track (the app's, or a library's) on the writer; see
    /// `migrate(_:recordedIn:)`.
    func migrate(with migrator: Migrator) throws -> [Migration] {
        guard let writer else {
            throw StoreError(code: .readOnly, message: "the store at \(path) was opened read-only and cannot be migrated")
        }
        return try writerQueue.sync {
            var migrator = migrator
            migrator.around = { db, body in try ForeignTracking.preserving(db, body) }
            return try migrator.migrate(writer)
        }
    }
}
