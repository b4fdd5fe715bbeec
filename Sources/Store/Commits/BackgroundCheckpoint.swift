import Dispatch

/// The writer's checkpoints, off the writer's queue.
///
/// SQLite checkpoints in the connection that commits, once the WAL holds 1,000 frames
/// (`wal_autocheckpoint`): the writer copies about 4 MB into the database file and syncs
/// it before its next transaction can begin. A new device applying a first sync's 100,000
/// rows spent about a tenth of its time so (2026-12-04). Here a commit past
/// ``frames`` asks for a passive checkpoint on a connection of its own, on a queue of its
/// own, while the writer goes on; one at a time.
///
/// A WAL starts again from its beginning only when a write transaction begins with every
/// frame copied and no reader on them. A writer that commits without a pause always begins
/// while a checkpoint on another connection is still copying, so past ``writerFrames``
/// the writer checkpoints itself, as SQLite would (most frames are copied by then), and its
/// next transaction starts the WAL again: the WAL stays bounded under any rate of commits.
final class BackgroundCheckpoint: Sendable {
    /// Frames in the WAL after a commit that ask for a checkpoint (SQLite's default).
    static let frames: Int32 = 1_000
    /// Frames after which the writer checkpoints itself.
    static let writerFrames: Int32 = 4 * frames

    private let queue = DispatchQueue(label: "sluice.checkpoint", qos: .utility)
    private let scheduled = Mutex(false)
    /// A connection to checkpoint on (throws when the file is no longer the store's).
    private let open: @Sendable () throws -> Connection

    init(open: @escaping @Sendable () throws -> Connection) {
        self.open = open
    }

    /// Installs itself as `writer`'s WAL hook, in place of SQLite's automatic checkpoint.
    func install(on writer: Connection) {
        writer.walCommitted = { [unowned writer, self] frames in
            if frames >= Self.writerFrames {
                writer.checkpointPassively()
            } else if frames >= Self.frames {
                request()
            }
        }
        writer.installWALHook()
    }

    /// Schedules a checkpoint unless one is scheduled or running.
    private func request() {
        guard scheduled.withLock({ running in
            defer { running = true }
            return !running
        }) else { return }
        queue.async { [self] in
            // A file replaced or gone: nothing to copy into (the writer finds out by itself).
            if let connection = try? open() { connection.checkpointPassively() }
            scheduled.withLock { $0 = false }
        }
    }

    /// Waits for a checkpoint under way, if any (the store closing).
    func finish() {
        queue.sync {}
    }
}
