#include <sqlite3.h>

static inline sqlite3_destructor_type _bench_transient(void) {
    return SQLITE_TRANSIENT;
}
