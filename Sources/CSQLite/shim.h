#ifndef SLUICE_CSQLITE_SHIM_H
#define SLUICE_CSQLITE_SHIM_H

// The preupdate hook is not declared here: Apple's system SQLite may lack it,
// so Store looks it up at run time (see Tracking/ChangeTracker.swift).
#include <sqlite3.h>
#include <string.h>

/// SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot
/// import as a constant: it tells SQLite to copy bound text and blobs at once.
static inline sqlite3_destructor_type _sluice_transient(void) {
    return SQLITE_TRANSIENT;
}

/// The wal-index of a connection in WAL mode, as its own VFS maps it
/// (`xShmMap` of region 0, 32 KiB, without extending it); NULL when there
/// is none. Valid while the connection keeps its WAL open.
static inline const volatile void *_sluice_wal_index(sqlite3 *db) {
    sqlite3_file *file = 0;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK || !file || !file->pMethods) return 0;
    if (file->pMethods->iVersion < 2 || !file->pMethods->xShmMap) return 0;
    volatile void *region = 0;
    if (file->pMethods->xShmMap(file, 0, 32768, 0, &region) != SQLITE_OK) return 0;
    return region;
}

/// Reads the first `count` bytes of a connection's database file through
/// its own file handle (no descriptor of ours, whose closing would drop
/// the process's POSIX locks on the file).
static inline int _sluice_read_database_header(sqlite3 *db, unsigned char *buffer, int count) {
    sqlite3_file *file = 0;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK || !file || !file->pMethods) return SQLITE_ERROR;
    return file->pMethods->xRead(file, buffer, count, 0);
}

/// The wal-index header's `iChange`, read as SQLite's readers read it: the
/// first copy, a memory barrier, the second copy (a writer writes them in
/// the other order). 0 when both agree and the header is initialized.
static inline int _sluice_wal_index_change(const volatile void *region, unsigned int *change) {
    unsigned char first[48], second[48];
    const volatile unsigned char *bytes = (const volatile unsigned char *)region;
    for (int i = 0; i < 48; i++) first[i] = bytes[i];
    __sync_synchronize();
    for (int i = 0; i < 48; i++) second[i] = bytes[48 + i];
    if (memcmp(first, second, 48) != 0 || first[12] != 1) return 1;
    unsigned int version;
    memcpy(&version, first, 4);
    if (version != 3007000) return 1;
    memcpy(change, first + 8, 4);
    return 0;
}

#endif
