#ifndef SLUICE_CSQLITE_SHIM_H
#define SLUICE_CSQLITE_SHIM_H

// The preupdate hook's prototypes sit behind this macro in sqlite3.h. Debian's
// libsqlite3 is compiled with it; Apple's system SQLite may not be, so Swift
// code treats it as optional (see Store's change tracking).
#ifndef SQLITE_ENABLE_PREUPDATE_HOOK
#define SQLITE_ENABLE_PREUPDATE_HOOK 1
#endif

#include <sqlite3.h>

/// SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot
/// import as a constant: it tells SQLite to copy bound text and blobs at once.
static inline sqlite3_destructor_type _sluice_transient(void) {
    return SQLITE_TRANSIENT;
}

/// sqlite3_db_config is variadic: this is its SQLITE_DBCONFIG_DEFENSIVE form.
static inline int _sluice_db_config_defensive(sqlite3 *db, int enable) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, enable, (int *)0);
}

#endif
