#ifndef SLUICE_SLOW_SYNC_VFS_H
#define SLUICE_SLOW_SYNC_VFS_H

/// Registers "sluice-slow-sync": the default VFS, except that syncing a main
/// database file waits first (see `sluice_test_set_sync_delay`). A checkpoint
/// syncs the database file after copying the WAL's frames and before it
/// records them as copied, so a delay there holds a checkpoint mid-way for as
/// long as a test needs. Not registered as the default. Returns an SQLite code.
int sluice_test_register_slow_sync_vfs(void);

/// How long each sync of a main database file opened through the VFS waits, in ms (0: none).
void sluice_test_set_sync_delay(int milliseconds);

#endif
