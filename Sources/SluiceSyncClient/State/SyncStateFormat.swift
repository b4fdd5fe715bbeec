import Sluice

/// The format of the device's sync tables (`sluice_sync_*`): numbered migrations on a
/// track of their own (`sluice_sync_migration`), applied by the store's migrator when a
/// client opens the store, apart from the app's migrations. A file whose track is newer
/// than this code (written by a newer client) is refused with `.databaseTooNew`.
///
/// A new column or table is a new migration at the end of ``migrations``; an applied
/// migration is never edited (its checksum is recorded).
enum SyncStateFormat {
    /// The track's bookkeeping table.
    static let track = "sluice_sync_migration"

    static let migrations: [Migration] = [
        // The tables as the client made them before they were versioned (2026-11-28,
        // 70633f9): `IF NOT EXISTS`, so that a file synced by that code is adopted as it is.
        Migration(version: 1, name: "sync_state", sql: """
            CREATE TABLE IF NOT EXISTS sluice_sync_state (key TEXT PRIMARY KEY, value);
            CREATE TABLE IF NOT EXISTS sluice_sync_id (tbl TEXT NOT NULL, local INTEGER NOT NULL, gid TEXT NOT NULL,
                pulled INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (tbl, local), UNIQUE (tbl, gid));
            CREATE TABLE IF NOT EXISTS sluice_sync_stamp (seq INTEGER PRIMARY KEY, clock INTEGER NOT NULL, acked INTEGER);
            CREATE TABLE IF NOT EXISTS sluice_sync_resurrect (tbl TEXT NOT NULL, local INTEGER NOT NULL, PRIMARY KEY (tbl, local));
            CREATE TABLE IF NOT EXISTS sluice_sync_fixup (tbl TEXT NOT NULL, gid TEXT NOT NULL, col TEXT NOT NULL, ref,
                PRIMARY KEY (tbl, gid, col));
            CREATE TABLE IF NOT EXISTS sluice_sync_quarantine (seq INTEGER PRIMARY KEY, device TEXT NOT NULL, local INTEGER NOT NULL,
                clock INTEGER NOT NULL, changes TEXT NOT NULL, error TEXT NOT NULL, at INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS sluice_sync_merge (tbl TEXT NOT NULL, local INTEGER NOT NULL, col TEXT NOT NULL, value,
                PRIMARY KEY (tbl, local, col));
            CREATE TABLE IF NOT EXISTS sluice_sync_attachment (tbl TEXT NOT NULL, gid TEXT NOT NULL, col TEXT NOT NULL,
                hash TEXT NOT NULL, size INTEGER NOT NULL, PRIMARY KEY (tbl, gid, col));
            CREATE INDEX IF NOT EXISTS sluice_sync_attachment_hash ON sluice_sync_attachment (hash);
            CREATE TABLE IF NOT EXISTS sluice_sync_chunk (hash TEXT NOT NULL, idx INTEGER NOT NULL, data BLOB NOT NULL,
                PRIMARY KEY (hash, idx));
            CREATE TABLE IF NOT EXISTS sluice_sync_held (tbl TEXT NOT NULL, gid TEXT NOT NULL, col TEXT NOT NULL, hash TEXT NOT NULL,
                PRIMARY KEY (tbl, gid, col));
            CREATE INDEX IF NOT EXISTS sluice_sync_held_hash ON sluice_sync_held (hash);
            CREATE TABLE IF NOT EXISTS sluice_sync_retired (tbl TEXT NOT NULL, local INTEGER NOT NULL, seq INTEGER NOT NULL,
                gid TEXT NOT NULL, next TEXT, reinserted INTEGER, PRIMARY KEY (tbl, local, seq));
            """),
        // The conflict inbox (2026-12-02): `sluice_live_` so that live queries observe it
        // (the change log leaves it out). The values' columns have no type: a value keeps
        // its storage class.
        Migration(version: 2, name: "conflict_inbox", sql: """
            CREATE TABLE sluice_live_sync_conflict (id INTEGER PRIMARY KEY, tbl TEXT NOT NULL, row_id INTEGER NOT NULL,
                gid TEXT NOT NULL, col TEXT, kind TEXT NOT NULL, rule TEXT NOT NULL,
                kept_value, kept_device TEXT, kept_clock INTEGER, lost_value, lost_device TEXT, lost_clock INTEGER,
                row_values TEXT, seq INTEGER, applied INTEGER, detail TEXT, at TEXT NOT NULL);
            CREATE INDEX sluice_live_sync_conflict_at ON sluice_live_sync_conflict (at);
            """),
        // Which device wrote each pulled transaction (2026-12-02), by the local log's sequence
        // of the transaction that applied it: "undo what the laptop just did".
        Migration(version: 3, name: "transaction_origin", sql: """
            CREATE TABLE sluice_sync_origin (seq INTEGER PRIMARY KEY, device TEXT NOT NULL, space_seq INTEGER NOT NULL,
                clock INTEGER NOT NULL);
            """),
    ]

    /// Brings the store's sync tables to this code's format. (A versioned file takes no
    /// write transaction of its own for the adoption: only an unversioned one does.)
    static func migrate(_ store: Store) throws {
        if try store.read({ db in try !db.tableExists(track) }) {
            try store.write { db in try adoptUnversioned(db) }
        }
        try store.migrate(migrations, recordedIn: track)
    }

    /// A file synced before the tables were versioned may predate two columns that code
    /// added when missing (`sluice_sync_stamp.acked`, `sluice_sync_fixup.ref`): they are
    /// added once, so that migration 1 describes every adopted file.
    private static func adoptUnversioned(_ db: Database) throws {
        guard try !db.tableExists(track) else { return }
        // Declared as migration 1 declares them.
        for (table, column, declaration) in [("sluice_sync_stamp", "acked", "acked INTEGER"), ("sluice_sync_fixup", "ref", "ref")]
        where try db.tableExists(table) {
            guard try !db.tableInfo(table).columns.contains(where: { $0.name == column }) else { continue }
            try db.execute(sql: "ALTER TABLE \(table) ADD COLUMN \(declaration)")
        }
    }
}
