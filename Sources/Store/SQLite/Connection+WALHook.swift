import CSQLite

/// What runs after each commit of a connection to a WAL database, in place of SQLite's
/// automatic checkpoint: `sqlite3_wal_hook` replaces the one `wal_autocheckpoint` installs,
/// so whoever sets it decides when to checkpoint (the store's writer: `BackgroundCheckpoint`).
extension Connection {
    /// Calls `walCommitted` after each commit, with the frames the WAL then holds. Nothing
    /// may run `PRAGMA wal_autocheckpoint` on this connection after: it would replace the hook.
    func installWALHook() {
        sqlite3_wal_hook(handle, { context, _, _, frames in
            guard let context else { return SQLITE_OK }
            Unmanaged<Connection>.fromOpaque(context).takeUnretainedValue().walCommitted?(frames)
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// A passive checkpoint of the main database on this connection, now (also from within
    /// the WAL hook, as SQLite's own automatic checkpoint runs): it copies the frames no
    /// reader still needs, and waits for no lock. Returns whether it ran (not busy).
    @discardableResult
    func checkpointPassively() -> Bool {
        sqlite3_wal_checkpoint_v2(handle, "main", SQLITE_CHECKPOINT_PASSIVE, nil, nil) == SQLITE_OK
    }
}
