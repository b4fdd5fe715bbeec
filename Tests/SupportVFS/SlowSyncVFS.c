#include "SlowSyncVFS.h"
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <unistd.h>

static sqlite3_vfs slow_vfs;
static sqlite3_vfs *real_vfs;
static sqlite3_io_methods slow_methods;
static const sqlite3_io_methods *real_methods;
static pthread_mutex_t methods_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int delay_ms;

static int slow_sync(sqlite3_file *file, int flags) {
    int ms = atomic_load(&delay_ms);
    if (ms > 0) usleep((useconds_t)ms * 1000);
    return real_methods->xSync(file, flags);
}

/// Opens through the default VFS; a main database file gets the same methods but a slow xSync.
static int slow_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags) {
    (void)vfs;
    int rc = real_vfs->xOpen(real_vfs, name, file, flags, out_flags);
    if (rc != SQLITE_OK || !file->pMethods || !(flags & SQLITE_OPEN_MAIN_DB)) return rc;
    pthread_mutex_lock(&methods_lock);
    if (!real_methods) {
        real_methods = file->pMethods;
        slow_methods = *file->pMethods;
        slow_methods.xSync = slow_sync;
    }
    if (file->pMethods == real_methods) file->pMethods = &slow_methods;
    pthread_mutex_unlock(&methods_lock);
    return rc;
}

static pthread_once_t registered = PTHREAD_ONCE_INIT;
static int register_result = SQLITE_ERROR;

static void register_once(void) {
    real_vfs = sqlite3_vfs_find(0);
    if (!real_vfs) return;
    slow_vfs = *real_vfs;
    slow_vfs.zName = "sluice-slow-sync";
    slow_vfs.xOpen = slow_open;
    slow_vfs.pNext = 0;
    register_result = sqlite3_vfs_register(&slow_vfs, 0);
}

int sluice_test_register_slow_sync_vfs(void) {
    pthread_once(&registered, register_once);
    return register_result;
}

void sluice_test_set_sync_delay(int milliseconds) { atomic_store(&delay_ms, milliseconds); }
