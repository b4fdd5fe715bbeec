internal import SluiceTestVFS

/// The "sluice-slow-sync" VFS (C, `SluiceTestVFS`): the default one, except that syncing
/// a main database file waits `delay` first. A checkpoint syncs the database file after
/// copying the WAL's frames and before recording them as copied, so a connection opened
/// through it holds its checkpoints mid-way for `delay`.
public enum SlowSyncVFS {
    public static let name = "sluice-slow-sync"

    public struct RegistrationFailed: Error {}

    /// Registers the VFS (once per process; not as the default).
    public static func register() throws {
        guard sluice_test_register_slow_sync_vfs() == 0 else { throw RegistrationFailed() }
    }

    /// How long each sync of a database file opened through the VFS waits, in ms (0: none).
    public static func setDelay(milliseconds: Int32) { sluice_test_set_sync_delay(milliseconds) }
}
