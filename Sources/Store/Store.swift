import CSQLite
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

    /// How a store opens its file.
    public struct Configuration: Sendable {
        /// How long a connection waits for another process's lock before
        /// failing with `.busy`, in milliseconds.
        public var busyTimeoutMilliseconds: Int32 = 5_000
        /// Whether the store only reads. A read-only store never creates,
        /// migrates or writes its file.
        public var readOnly = false
        /// Whether a missing file is created (ignored when `readOnly`).
        public var createIfMissing = true
        /// SQLite's `synchronous` setting. `.full` (the default) syncs the
        /// WAL on every commit: a committed transaction survives power loss.
        public var synchronous: Synchronous = .full

        /// `PRAGMA synchronous` levels.
        ///
        /// Related SQLite documentation: <https://www.sqlite.org/pragma.html#pragma_synchronous>
        public enum Synchronous: String, Sendable {
            /// Commits survive an application crash, not always a power loss.
            case normal = "NORMAL"
            /// Commits survive power loss.
            case full = "FULL"
        }

        /// The defaults: create if missing, read-write, `synchronous = FULL`.
        public init() {}
    }

    /// The database file's path.
    public let path: String
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
    /// Polls for other processes' commits while anything is observed (writer queue only).
    private var externalChangeTimer: DispatchSourceTimer?
    /// Runs observations on their own queue and read connection.
    let observationCenter: ObservationCenter

    /// How often the store checks for commits by other processes or
    /// connections while anything is observed.
    static let externalChangePollInterval: DispatchTimeInterval = .milliseconds(10)

    /// Opens (or creates) the database at `path`.
    ///
    /// - Throws: `StoreError` with `.cannotOpen` when the file cannot be
    ///   opened, `.notADatabase` when it is not an SQLite database (the file
    ///   is left untouched).
    public init(path: String, configuration: Configuration = Configuration()) throws {
        self.path = path
        self.configuration = configuration
        writerQueue = DispatchQueue(label: "sluice.writer")
        readerQueue = DispatchQueue(label: "sluice.reader")
        writerQueue.setSpecific(key: writerKey, value: true)
        readerQueue.setSpecific(key: readerKey, value: true)
        observationCenter = ObservationCenter(openConnection: {
            try Self.openReader(path: path, configuration: configuration)
        })

        if configuration.readOnly {
            writer = nil
            tracker = nil
            reader = try Self.openReader(path: path, configuration: configuration)
        } else {
            if !configuration.createIfMissing, !FileManager.default.fileExists(atPath: path) {
                throw StoreError(code: .cannotOpen, message: "no database at \(path)")
            }
            let connection = try Connection(path: path, mode: configuration.createIfMissing ? .create : .readWrite,
                                            busyTimeout: configuration.busyTimeoutMilliseconds)
            // WAL lets the reader run while the writer writes.
            let mode = try Database(connection: connection, isReadOnly: false)
                .fetchRows(sql: "PRAGMA journal_mode = WAL").first.flatMap { String(sqliteValue: $0[0]) }
            guard mode?.lowercased() == "wal" else {
                throw StoreError(code: .cannotOpen, message: "cannot switch \(path) to WAL mode (journal mode is \(mode ?? "unknown"))")
            }
            try connection.execute(script: "PRAGMA foreign_keys = ON; PRAGMA synchronous = \(configuration.synchronous.rawValue)")
            writer = Database(connection: connection, isReadOnly: false)
            tracker = ChangeTracker(connection: connection)
        }
        observationCenter.trackingChanged = { [weak self] tracking in self?.setTracking(tracking) }
        observationCenter.pollsOwnConnection = configuration.readOnly
    }

    deinit {
        externalChangeTimer?.cancel()
        tracker?.uninstall()
        observationCenter.stopPolling()
    }

    /// Opens the database and applies pending migrations.
    ///
    /// - Throws: as `init(path:configuration:)`, and `.migration` or
    ///   `.databaseTooNew` from `migrate(_:)`.
    public convenience init(path: String, migrations: [Migration], configuration: Configuration = Configuration()) throws {
        try self.init(path: path, configuration: configuration)
        try migrate(migrations)
    }

    private static func openReader(path: String, configuration: Configuration) throws -> Database {
        let connection = try Connection(path: path, mode: .readWrite, busyTimeout: configuration.busyTimeoutMilliseconds)
        try connection.execute(script: "PRAGMA query_only = 1")
        return Database(connection: connection, isReadOnly: true)
    }

    // MARK: - Transactions

    /// Runs `body` in a write transaction on the store's one writer.
    ///
    /// The transaction commits when `body` returns and rolls back when it
    /// throws; the error is rethrown. Writes from all threads run one at a
    /// time, in call order per thread. After a commit, every live query and
    /// observed object it changed is notified once, in commit order, on the
    /// observation queue; a rolled-back transaction notifies nothing.
    ///
    /// Nesting: calling `write` from inside a `write` closure runs the inner
    /// body in a savepoint of the same transaction. If the inner body throws,
    /// only its changes are undone and the error reaches the outer body, which
    /// may catch it and go on; nothing is committed until the outer body returns.
    ///
    /// - Throws: what `body` throws, or `StoreError` when SQLite fails
    ///   (`.busy` after the busy timeout, `.constraint`, `.full`, ...).
    @discardableResult
    public func write<T>(_ body: (Database) throws -> T) throws -> T {
        try write(withoutNotifying: [], body)
    }

    /// Runs a write transaction whose changes are not delivered to the
    /// observations of `tokens` (as Realm's `write(withoutNotifying:)`): for
    /// a change the UI made itself and has already shown. Their state still
    /// follows the commit, so the next changeset they get starts from it.
    ///
    /// To keep that commit apart from others, this waits for the observation
    /// queue to process earlier commits and this one; do not call it from an
    /// observation callback that runs on the observation queue.
    @discardableResult
    public func write<T>(withoutNotifying tokens: [ObservationToken], _ body: (Database) throws -> T) throws -> T {
        guard let writer, let tracker else {
            throw StoreError(code: .readOnly, message: "the store at \(path) was opened read-only")
        }
        if DispatchQueue.getSpecific(key: writerKey) == true {
            return try writer.savepoint(body)
        }
        let silenced = Set(tokens.compactMap(\.observationID))
        if !silenced.isEmpty { observationCenter.drain() }
        let result: T = try writerQueue.sync {
            try writer.begin(immediate: true)
            checkExternalCommit(tracker)
            tracker.transactionBegan()
            writer.refreshSchemaIfChanged()
            do {
                let result = try body(writer)
                try observationCenter.commit({ try writer.commit() }, changes: { tracker.takeChanges() }, silenced: silenced)
                return result
            } catch {
                writer.rollback()
                tracker.discardChanges()
                throw error
            }
        }
        if !silenced.isEmpty { observationCenter.drain() }
        return result
    }

    /// Runs `body` in a read transaction: it sees one consistent snapshot of
    /// the last committed state, and does not wait for a write in progress.
    ///
    /// Called from inside a `write` closure, it still reads the committed
    /// state, not the enclosing transaction's uncommitted changes (use the
    /// `tx` handle for those).
    public func read<T>(_ body: (Database) throws -> T) throws -> T {
        if DispatchQueue.getSpecific(key: readerKey) == true, let reader {
            return try body(reader)
        }
        return try readerQueue.sync {
            let db: Database
            if let reader {
                db = reader
            } else {
                db = try Self.openReader(path: path, configuration: configuration)
                reader = db
            }
            try db.begin(immediate: false)
            db.refreshSchemaIfChanged()
            defer { db.rollback() }
            return try body(db)
        }
    }

    // MARK: - Observation plumbing

    /// Starts an observation and returns the token that keeps it alive.
    func register(_ observation: some StoreObservation & TokenBearing) -> ObservationToken {
        let center = observationCenter
        let id = ObjectIdentifier(observation)
        let token = ObservationToken(observationID: id) { center.remove(id) }
        observation.token = token
        _ = center.add(observation)
        return token
    }

    /// Turns change tracking on while anything is observed (on the writer
    /// queue, before the observation reads its initial state).
    ///
    /// Reads the current state rather than trusting the argument: the last
    /// observation going away and a new one arriving race, and their calls
    /// can reach the writer in either order.
    private func setTracking(_: Bool) {
        guard let tracker else { return }
        let work = {
            let tracking = self.observationCenter.isObserving
            guard tracking != tracker.isTracking else { return }
            tracker.isTracking = tracking
            if tracking {
                tracker.resetDataVersion()
                self.startExternalChangeTimer()
            } else {
                self.externalChangeTimer?.cancel()
                self.externalChangeTimer = nil
            }
        }
        if DispatchQueue.getSpecific(key: writerKey) == true { work() } else { writerQueue.sync(execute: work) }
    }

    private func startExternalChangeTimer() {
        guard externalChangeTimer == nil, let tracker else { return }
        let timer = DispatchSource.makeTimerSource(queue: writerQueue)
        timer.schedule(deadline: .now() + Self.externalChangePollInterval, repeating: Self.externalChangePollInterval,
                       leeway: .milliseconds(2))
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            self.checkExternalCommit(tracker)
        }
        timer.resume()
        externalChangeTimer = timer
    }

    /// On the writer queue: records a commit by another process or connection.
    private func checkExternalCommit(_ tracker: ChangeTracker) {
        if tracker.isTracking, tracker.otherConnectionCommitted() {
            observationCenter.recordExternalCommit()
        }
    }

    /// Waits until every commit so far has been delivered to observers
    /// (checking first for other processes' commits). For tests and tools.
    public func waitForObservers() {
        if let tracker, DispatchQueue.getSpecific(key: writerKey) != true {
            writerQueue.sync { checkExternalCommit(tracker) }
        }
        observationCenter.drain()
    }

    // MARK: - Migrations

    /// Applies the migrations the database has not applied yet, in version
    /// order, each in its own transaction, and returns them.
    ///
    /// - Throws: `.migration` when an applied migration's SQL changed (its
    ///   checksum differs), an applied migration is missing from `migrations`,
    ///   or a migration fails (the database stays at the previous version);
    ///   `.databaseTooNew` when the database has migrations newer than these.
    @discardableResult
    public func migrate(_ migrations: [Migration]) throws -> [Migration] {
        guard let writer else {
            throw StoreError(code: .readOnly, message: "the store at \(path) was opened read-only and cannot be migrated")
        }
        return try writerQueue.sync {
            try Migrator(migrations: migrations).migrate(writer)
        }
    }

    /// The migrations recorded as applied in the database, by version.
    public func appliedMigrations() throws -> [AppliedMigration] {
        try read { db in try Migrator.applied(in: db) }
    }
}
