#ifndef SLUICE_CSQLITE_SHIM_H
#define SLUICE_CSQLITE_SHIM_H

// The preupdate hook is not declared here: Apple's system SQLite may lack it,
// so Store looks it up at run time (see Tracking/ChangeTracker.swift).
#include <sqlite3.h>

/// SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot
/// import as a constant: it tells SQLite to copy bound text and blobs at once.
static inline sqlite3_destructor_type _sluice_transient(void) {
    return SQLITE_TRANSIENT;
}

#endif
