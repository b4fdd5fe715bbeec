#include <sqlite3.h>

static inline sqlite3_destructor_type _bench_transient(void) {
    return SQLITE_TRANSIENT;
}

#if defined(__linux__)
#include <malloc.h>
/// Bytes malloc has handed out and not taken back (for the scale benchmark).
static inline size_t _bench_allocated_bytes(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}
#else
static inline size_t _bench_allocated_bytes(void) { return 0; }
#endif
