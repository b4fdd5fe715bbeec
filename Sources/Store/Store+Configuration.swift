extension Store {
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
        /// Whether this store's writes record what they change in the
        /// durable change log (`sluice_*` tables of the same file), which
        /// history, undo, other processes' incremental changesets and sync
        /// read. On by default.
        public var logsChanges = true
        /// The author recorded with this store's transactions unless a
        /// transaction sets `Database.transactionAuthor` (`"app"`, `"widget"`...).
        public var author: String?
        /// How long the change log keeps transactions. Pruning runs in small
        /// batches after commits and never removes what a registered
        /// history consumer has not acknowledged.
        public var historyRetention: HistoryRetention = .age(7 * 24 * 3600)
        /// The most memory, in KiB, the writer's page cache may hold (SQLite's
        /// `cache_size`; its default is 2,000 KiB). It is taken only as
        /// transactions touch pages. A transaction that touches more pages than
        /// fit (a bulk import, a sync's first upload or a pulled page of 10,000
        /// rows, with their indexes and change log) writes some to the WAL before
        /// its commit and then writes them again: with 8 MiB, 100,000 rows with a
        /// random-keyed index and a log went in 18% faster than with 2 MiB.
        /// Readers keep SQLite's default.
        public var writerCacheKiB = 8_192

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
}
