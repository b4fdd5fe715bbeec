import CSQLite
import Foundation

/// Counts the commits made to a database file by every connection of every
/// process, as the file itself records them.
///
/// In WAL mode it is the wal-index header's `iChange`, read in memory
/// through the mapping SQLite's VFS made for one connection:
///
/// > iChange: Unsigned integer counter, incremented with each transaction.
///
/// SQLite writes that header twice, the second copy first, and a reader
/// that finds the two copies different reads again; so does this. In
/// rollback-journal mode it is the database header's file change counter
/// (offset 24), which every commit increments, read through the
/// connection's file handle. (Both are documented:
/// <https://www.sqlite.org/walformat.html>, <https://www.sqlite.org/fileformat.html>.)
/// Nothing here opens a descriptor of its own: closing one would drop
/// every POSIX lock this process holds on the file.
///
/// A value is comparable only with values read while a connection kept the
/// file open; `newer(_:than:)` compares across wrap-around. Thread-safe.
final class CommitCounter: @unchecked Sendable {
    // @unchecked Sendable: everything is guarded by `lock`.

    private let lock = NSLock()
    private let open: (() -> Connection?)?
    private var connection: Connection?
    private var region: UnsafeRawPointer?
    /// Whether the last read found the file in WAL mode: a switch makes one
    /// read say nil, since the two modes' counters cannot be compared.
    private var lastWAL: Bool?
    private var switches = 0

    /// Reads through `connection`, by a caller that uses it on its queue
    /// and only inside a transaction (the writer's commit hook).
    init(connection: Connection) {
        self.connection = connection
        open = nil
    }

    /// Reads through a connection of its own, opened by `open` on the
    /// first read and closed by `close()`.
    init(open: @escaping () -> Connection?) {
        self.open = open
    }

    /// Closes its own connection (opened again on the next read).
    func close() {
        lock.withLock {
            region = nil
            if open != nil { connection = nil }
        }
    }

    /// The number of the last commit, or nil when the file cannot tell
    /// (no wal-index, or it was being rewritten three reads in a row).
    func read() -> UInt32? {
        lock.withLock {
            if let region { return Self.change(region) }
            if connection == nil, let open { connection = open() }
            guard let connection else { return nil }
            var header = [UInt8](repeating: 0, count: 28)
            guard _sluice_read_database_header(connection.handle, &header, Int32(header.count)) == SQLITE_OK else { return nil }
            let wal = header[18] == 2
            defer { lastWAL = wal }
            let switched = lastWAL.map { $0 != wal } ?? false
            if switched { switches += 1 }
            guard wal else {
                // Rollback journal: the change counter, big-endian.
                return switched ? nil : header[24..<28].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            }
            // WAL: a connection maps the wal-index in its first read transaction.
            if !connection.isInTransaction {
                guard open != nil else { return nil }
                _ = try? connection.execute(script: "BEGIN; SELECT 1 FROM sqlite_schema LIMIT 1; ROLLBACK")
            }
            guard let mapped = _sluice_wal_index(connection.handle) else { return nil }
            region = UnsafeRawPointer(mapped)
            return switched ? nil : Self.change(mapped)
        }
    }

    /// Counts the switches between WAL and rollback-journal modes this
    /// counter saw: numbers read in different epochs are not comparable.
    var epoch: Int { lock.withLock { switches } }

    /// Whether the file was in a rollback-journal mode at the last `read()`
    /// (its header said it was not in WAL mode); false when unknown.
    var isRollbackJournal: Bool { lock.withLock { lastWAL == false } }

    /// The bytes of the WAL's frames (its size since it last restarted), or
    /// nil when the file is not in WAL mode or the wal-index could not be read.
    func walBytes() -> Int64? {
        readIndex { region in
            var frames: UInt32 = 0
            var pageSize: UInt32 = 0
            guard _sluice_wal_index_frames(region, &frames, &pageSize) == 0 else { return nil }
            return Int64(frames) * Int64(pageSize + 24)
        }
    }

    /// Whether a checkpoint is copying the WAL's frames to the database right
    /// now (by any connection): it set out to copy more frames than are
    /// recorded as copied. A read transaction begun meanwhile holds frames; one
    /// begun after it finished reads the database file only. False when
    /// unknown (not in WAL mode, the wal-index unreadable).
    func checkpointUnderWay() -> Bool {
        readIndex { region in
            var backfilled: UInt32 = 0
            var attempted: UInt32 = 0
            guard _sluice_wal_index_backfill(region, &backfilled, &attempted) == 0 else { return nil }
            return attempted > backfilled
        } ?? false
    }

    /// Reads the wal-index (WAL mode only), trying three times while a
    /// writer changes the header under it (`body` returns nil).
    private func readIndex<T>(_ body: (UnsafeRawPointer) -> T?) -> T? {
        guard read() != nil else { return nil }
        return lock.withLock {
            guard let region else { return nil }
            for _ in 0..<3 { if let value = body(region) { return value } }
            return nil
        }
    }

    private static func change(_ region: UnsafeRawPointer) -> UInt32? {
        var change: UInt32 = 0
        for _ in 0..<3 where _sluice_wal_index_change(region, &change) == 0 {
            return change
        }
        return nil
    }

    /// Whether `a` counts more commits than `b` (across wrap-around).
    static func newer(_ a: UInt32, than b: UInt32) -> Bool {
        Int32(bitPattern: a &- b) > 0
    }
}
