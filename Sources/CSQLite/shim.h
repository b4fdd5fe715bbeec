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

/// Copies the wal-index header as SQLite's readers read it: the first
/// copy, a memory barrier, the second copy (a writer writes them in the
/// other order). 0 when both agree and the header is initialized.
static inline int _sluice_wal_index_header(const volatile void *region, unsigned char header[48]) {
    unsigned char second[48];
    const volatile unsigned char *bytes = (const volatile unsigned char *)region;
    for (int i = 0; i < 48; i++) header[i] = bytes[i];
    __sync_synchronize();
    for (int i = 0; i < 48; i++) second[i] = bytes[48 + i];
    if (memcmp(header, second, 48) != 0 || header[12] != 1) return 1;
    unsigned int version;
    memcpy(&version, header, 4);
    return version == 3007000 ? 0 : 1;
}
/// The wal-index header's `iChange`. 0 when the header could be read.
static inline int _sluice_wal_index_change(const volatile void *region, unsigned int *change) {
    unsigned char header[48];
    if (_sluice_wal_index_header(region, header) != 0) return 1;
    memcpy(change, header + 8, 4);
    return 0;
}
/// The wal-index header's `mxFrame` (frames in the WAL) and `szPage` (the
/// page size; 1 stands for 65536). 0 when the header could be read.
static inline int _sluice_wal_index_frames(const volatile void *region, unsigned int *frames, unsigned int *pageSize) {
    unsigned char header[48];
    if (_sluice_wal_index_header(region, header) != 0) return 1;
    unsigned short size;
    memcpy(&size, header + 14, 2);
    *pageSize = size == 1 ? 65536u : (unsigned int)size;
    memcpy(frames, header + 16, 4);
    return 0;
}
/// The wal-index's checkpoint record: `nBackfill` (frames copied to the
/// database) and `nBackfillAttempted` (frames the latest checkpoint set out
/// to copy: larger while one is copying). Read without the checkpoint lock,
/// as a hint. 0 when the header could be read.
static inline int _sluice_wal_index_backfill(const volatile void *region, unsigned int *backfilled, unsigned int *attempted) {
    unsigned char header[48];
    if (_sluice_wal_index_header(region, header) != 0) return 1;
    const volatile unsigned char *bytes = (const volatile unsigned char *)region;
    unsigned char info[36];
    for (int i = 0; i < 36; i++) info[i] = bytes[96 + i];
    memcpy(backfilled, info, 4);
    memcpy(attempted, info + 32, 4);
    return 0;
}
/// The parts of FTS5's `bm25` for the current row, so that a live search
/// can score rows it did not read again: a blob of 8-byte slots, the
/// index's row count and token count (int64), the row's token count
/// (int64), then for each phrase of the query the rows that hold it (int64)
/// and the row's weighted count of it (double, summed instance by instance
/// as bm25 sums it). Trailing arguments are column weights, as bm25's.
/// The index's figures are computed once per statement.
static inline int _sluice_bm25_count_hit(const Fts5ExtensionApi *api, Fts5Context *fts, void *user) {
    (void)api; (void)fts;
    *(sqlite3_int64 *)user += 1;
    return SQLITE_OK;
}

static inline void _sluice_bm25_parts(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int count, sqlite3_value **values) {
    if (api->iVersion < 2) {
        sqlite3_result_error(ctx, "sluice_bm25_parts needs FTS5's extension API version 2", -1);
        return;
    }
    int phrases = api->xPhraseCount(fts);
    sqlite3_int64 *figures = (sqlite3_int64 *)api->xGetAuxdata(fts, 0);
    int rc = SQLITE_OK;
    if (!figures) {
        figures = (sqlite3_int64 *)sqlite3_malloc64(sizeof(sqlite3_int64) * (sqlite3_uint64)(2 + phrases));
        if (!figures) { sqlite3_result_error_nomem(ctx); return; }
        memset(figures, 0, sizeof(sqlite3_int64) * (size_t)(2 + phrases));
        rc = api->xRowCount(fts, &figures[0]);
        if (rc == SQLITE_OK) rc = api->xColumnTotalSize(fts, -1, &figures[1]);
        for (int i = 0; rc == SQLITE_OK && i < phrases; i++) rc = api->xQueryPhrase(fts, i, &figures[2 + i], _sluice_bm25_count_hit);
        if (rc == SQLITE_OK) {
            rc = api->xSetAuxdata(fts, figures, sqlite3_free);
        } else {
            sqlite3_free(figures);
        }
        if (rc != SQLITE_OK) { sqlite3_result_error_code(ctx, rc); return; }
    }
    sqlite3_uint64 size = sizeof(sqlite3_int64) * (sqlite3_uint64)(3 + 2 * phrases);
    unsigned char *blob = (unsigned char *)sqlite3_malloc64(size);
    if (!blob) { sqlite3_result_error_nomem(ctx); return; }
    memset(blob, 0, (size_t)size);
    memcpy(blob, figures, 2 * sizeof(sqlite3_int64));
    double *frequencies = (double *)sqlite3_malloc64(sizeof(double) * (sqlite3_uint64)(phrases > 0 ? phrases : 1));
    if (!frequencies) { sqlite3_free(blob); sqlite3_result_error_nomem(ctx); return; }
    memset(frequencies, 0, sizeof(double) * (size_t)(phrases > 0 ? phrases : 1));
    int instances = 0;
    rc = api->xInstCount(fts, &instances);
    for (int i = 0; rc == SQLITE_OK && i < instances; i++) {
        int phrase, column, offset;
        rc = api->xInst(fts, i, &phrase, &column, &offset);
        if (rc == SQLITE_OK && phrase >= 0 && phrase < phrases) {
            double weight = (count > column) ? sqlite3_value_double(values[column]) : 1.0;
            frequencies[phrase] += weight;
        }
    }
    int tokens = 0;
    if (rc == SQLITE_OK) rc = api->xColumnSize(fts, -1, &tokens);
    if (rc != SQLITE_OK) {
        sqlite3_free(frequencies);
        sqlite3_free(blob);
        sqlite3_result_error_code(ctx, rc);
        return;
    }
    sqlite3_int64 rowTokens = tokens;
    memcpy(blob + 2 * sizeof(sqlite3_int64), &rowTokens, sizeof(sqlite3_int64));
    for (int i = 0; i < phrases; i++) {
        memcpy(blob + (size_t)(3 + 2 * i) * sizeof(sqlite3_int64), &figures[2 + i], sizeof(sqlite3_int64));
        memcpy(blob + (size_t)(4 + 2 * i) * sizeof(sqlite3_int64), &frequencies[i], sizeof(double));
    }
    sqlite3_free(frequencies);
    sqlite3_result_blob64(ctx, blob, size, sqlite3_free);
}

/// Registers `sluice_bm25_parts` with the connection's FTS5; SQLITE_ERROR
/// when the connection has no FTS5 (then live searches read bm25 itself).
static inline int _sluice_register_bm25_parts(sqlite3 *db) {
    fts5_api *api = 0;
    sqlite3_stmt *statement = 0;
    int rc = sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &statement, 0);
    if (rc != SQLITE_OK) return rc;
    sqlite3_bind_pointer(statement, 1, (void *)&api, "fts5_api_ptr", 0);
    sqlite3_step(statement);
    rc = sqlite3_finalize(statement);
    if (rc != SQLITE_OK || !api || api->iVersion < 2) return SQLITE_ERROR;
    return api->xCreateFunction(api, "sluice_bm25_parts", 0, _sluice_bm25_parts, 0);
}

#endif
