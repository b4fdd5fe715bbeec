import Foundation

/// The durable change log: what every committed transaction of every
/// Sluice writer (and, through triggers, of tracked foreign writers)
/// changed, in tables of the same file, written in the same transaction.
///
/// - `sluice_transaction`: one row per logged transaction: `seq` (the
///   sequence number, AUTOINCREMENT so never reused), `at` (milliseconds
///   since 1970), `author`, `token` (how a foreign writer's triggers find
///   the transaction they are filling), `first_change`: the `id` of its
///   first change row, and `commit_number`: the file's commit counter after
///   this commit (`CommitCounter`; a Sluice writer fills it, so other stores
///   on the file know that the log names every commit they missed).
/// - `sluice_change`: one row per changed row, in the order of the changes:
///   `id` (increasing: each transaction's rows come after every earlier
///   one's, so a range of transactions is a range of ids and the table
///   needs no index), `seq`, `tbl`, `op` (`insert`, `update`, `delete`), `row_id` (the rowid
///   after the change; before it for a delete), `old_row_id` (when an
///   update moved the rowid), `key` (the primary key: its value, or a JSON
///   array for a composite key), `old` and `new` (JSON objects, see
///   `LogValues`: an insert has `new` with every column, a delete `old`
///   with every column, an update the changed columns in both).
/// - `sluice_log_state`: `database_id` (tokens name their database) and
///   `pruned_through` (the last sequence retention removed).
/// - `sluice_foreign`: one row, read by the foreign-writer triggers; Sluice
///   writers read it as NULL (their authorizer ignores it), so the triggers
///   stay quiet on connections that log by themselves.
/// - `sluice_consumer`: registered consumers and what they acknowledged.
enum ChangeLog {
    static let schemaSQL = """
        CREATE TABLE IF NOT EXISTS sluice_transaction (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            at INTEGER NOT NULL,
            author TEXT,
            token TEXT,
            first_change INTEGER,
            commit_number INTEGER
        );
        CREATE TABLE IF NOT EXISTS sluice_change (
            id INTEGER PRIMARY KEY,
            seq INTEGER NOT NULL,
            tbl TEXT NOT NULL,
            op TEXT NOT NULL,
            row_id INTEGER NOT NULL,
            old_row_id INTEGER,
            key,
            old TEXT,
            new TEXT
        );
        CREATE TABLE IF NOT EXISTS sluice_log_state (name TEXT PRIMARY KEY, value);
        INSERT OR IGNORE INTO sluice_log_state VALUES ('database_id', lower(hex(randomblob(6)))), ('pruned_through', 0);
        CREATE TABLE IF NOT EXISTS sluice_foreign (active INTEGER NOT NULL);
        INSERT INTO sluice_foreign SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM sluice_foreign);
        CREATE TABLE IF NOT EXISTS sluice_consumer (name TEXT PRIMARY KEY, acknowledged INTEGER NOT NULL, at INTEGER NOT NULL);
        \(replacedSQL)
        """

    /// The foreign-writer triggers' scratch table: rows an INSERT or UPDATE
    /// of a foreign writer may replace, kept by a BEFORE trigger until the
    /// AFTER trigger logs those that are gone (empty between statements).
    static let replacedSQL = "CREATE TABLE IF NOT EXISTS sluice_replaced (id INTEGER PRIMARY KEY, tbl TEXT NOT NULL, row_id INTEGER NOT NULL, key, old TEXT);"

    /// The table and column the foreign-writer triggers check, which Sluice writers read as NULL.
    static let foreignGuardTable = "sluice_foreign"
    static let foreignGuardColumn = "active"
    /// Names of the foreign-writer triggers: `sluice_log_<table>_<insert|update|delete>`.
    static let triggerPrefix = "sluice_log_"
    /// Names of their BEFORE triggers that keep what REPLACE may delete:
    /// `sluice_replace_<table>_<insert|update>`.
    static let replaceTriggerPrefix = "sluice_replace_"

    /// Whether the log's tables exist.
    static func exists(_ db: Database) throws -> Bool {
        try db.tableExists("sluice_change")
    }

    /// Creates the log's tables when they are missing, or brings a log
    /// made by an earlier version up to date (in the caller's transaction).
    static func create(_ db: Database) throws {
        guard try exists(db) else { return try db.execute(script: schemaSQL) }
        try upgrade(db)
    }

    /// Whether the log's tables, and the triggers of tracked tables, are as this version writes them.
    static func isCurrent(_ db: Database) throws -> Bool {
        try !db.fetchRows(sql: "SELECT 1 FROM pragma_table_info('sluice_transaction') WHERE name = 'first_change'").isEmpty
            && !db.fetchRows(sql: "SELECT 1 FROM pragma_table_info('sluice_transaction') WHERE name = 'commit_number'").isEmpty
            && db.tableExists("sluice_replaced")
            && ForeignTracking.outdatedTables(db).isEmpty
    }

    /// Brings a log made by an earlier version up to date. Logs made before
    /// `first_change` found a transaction's changes through an index on
    /// `seq`: fill `first_change` and drop the index. Foreign-writer
    /// triggers made before `sluice_replaced` did not log the rows a
    /// writer's REPLACE deleted: install them anew.
    private static func upgrade(_ db: Database) throws {
        guard try !isCurrent(db) else { return }
        let tracked = try ForeignTracking.trackedTables(db)
        for table in tracked { try ForeignTracking.untrack(table, db) }
        if try db.fetchRows(sql: "SELECT 1 FROM pragma_table_info('sluice_transaction') WHERE name = 'first_change'").isEmpty {
            try db.execute(script: """
                ALTER TABLE sluice_transaction ADD COLUMN first_change INTEGER;
                UPDATE sluice_transaction SET first_change = coalesce(
                    (SELECT min(id) FROM sluice_change WHERE seq = sluice_transaction.seq),
                    (SELECT coalesce(max(id), 0) + 1 FROM sluice_change WHERE seq < sluice_transaction.seq));
                DROP INDEX IF EXISTS sluice_change_by_seq;
                """)
        }
        if try db.fetchRows(sql: "SELECT 1 FROM pragma_table_info('sluice_transaction') WHERE name = 'commit_number'").isEmpty {
            try db.execute(script: "ALTER TABLE sluice_transaction ADD COLUMN commit_number INTEGER")
        }
        try db.execute(script: replacedSQL)
        db.refreshSchemaIfChanged()
        try ForeignTracking.track(tracked, db)
    }

    /// The `first_change` of a transaction about to write its first change row.
    static let nextChangeID = "(SELECT coalesce(max(id), 0) + 1 FROM sluice_change)"

    /// A condition on `sluice_change` selecting the changes of the
    /// transactions with `?1 < seq <= ?2`, as a range of ids.
    static let changesInRange = """
        id >= coalesce((SELECT first_change FROM sluice_transaction WHERE seq > ?1 ORDER BY seq LIMIT 1), 9223372036854775807) \
        AND id < coalesce((SELECT first_change FROM sluice_transaction WHERE seq > ?2 ORDER BY seq LIMIT 1), 9223372036854775807) \
        AND seq > ?1 AND seq <= ?2
        """

    /// Where the log stands on a connection's snapshot: its last sequence
    /// and change, what retention removed, and the schema version (nil
    /// fields when there is no log).
    struct Position: Equatable, Sendable {
        var sequence: Int64
        var prunedThrough: Int64
        var schemaVersion: Int64
        /// The newest change row. A foreign writer's commit can add rows to
        /// the newest logged transaction while it is open (`LogTriggers`),
        /// so the sequence alone does not say what is new.
        var lastChange: Int64 = 0
        /// The commit counter at this position (`CommitCounter`), when known.
        var commit: UInt32?
        /// The first change of the newest logged transaction when foreign
        /// writers may still add to it (nil when none may).
        var openForeignFirstChange: Int64?
    }

    /// Where the log stands on `db`'s snapshot; nil when it cannot be read.
    static func position(_ db: Database) -> Position? {
        guard let schemaVersion = try? db.connection.scalarInt(sql: "PRAGMA schema_version") else { return nil }
        guard let statement = try? db.cachedStatement(sql: """
            SELECT (SELECT max(seq) FROM sluice_transaction), (SELECT value FROM sluice_log_state WHERE name = 'pruned_through'),
                   (SELECT max(id) FROM sluice_change), (SELECT first_change FROM sluice_transaction WHERE \(openForeign))
            """) else {
            return Position(sequence: 0, prunedThrough: 0, schemaVersion: schemaVersion)    // no log (yet)
        }
        defer { statement.reset() }
        guard (try? statement.step()) == true else { return nil }
        return Position(sequence: Int64(sqliteValue: statement.value(at: 0)) ?? 0,
                        prunedThrough: Int64(sqliteValue: statement.value(at: 1)) ?? 0,
                        schemaVersion: schemaVersion,
                        lastChange: Int64(sqliteValue: statement.value(at: 2)) ?? 0,
                        openForeignFirstChange: Int64(sqliteValue: statement.value(at: 3)))
    }

    /// The database's id, which tokens carry (nil when there is no log yet).
    static func databaseID(_ db: Database) throws -> String? {
        guard try exists(db) else { return nil }
        return try db.fetchRows(sql: "SELECT value FROM sluice_log_state WHERE name = 'database_id'").first.flatMap { String(sqliteValue: $0[0]) }
    }

    /// The tables whose every writer fills the log (foreign-writer triggers
    /// for insert, update and delete are installed), lower-cased.
    static func trackedTables(_ db: Database) throws -> Set<String> {
        let rows = try db.fetchRows(sql: """
            SELECT lower(tbl_name) FROM sqlite_schema WHERE type = 'trigger' AND name LIKE 'sluice\\_log\\_%' ESCAPE '\\'
            GROUP BY lower(tbl_name) HAVING count(*) = 3
            """)
        return Set(rows.compactMap { String(sqliteValue: $0[0]) })
    }

    /// What commits after `position` changed, read on a snapshot whose
    /// commit counter reads `commit` (nil when unknown).
    ///
    /// - Every commit in between is known exactly when the log names each
    ///   one: as many logged transactions as the counter moved, each with
    ///   its commit number, and none missing (a Sluice writer logs its
    ///   commit's number; a writer that is not Sluice logs none, or nothing).
    /// - Otherwise: exact rows for tracked tables, unknown for the others (a
    ///   foreign writer may have changed them unseen); unknown everywhere when
    ///   retention removed part of what is needed or when nothing was logged.
    /// - Nothing when the counter did not move; a schema change when the
    ///   schema version moved.
    static func changes(after position: Position, on db: Database, commit: UInt32?) throws -> (ChangedRows, Position) {
        guard var now = self.position(db) else { throw StoreError(code: .error, message: "cannot read the change log") }
        now.commit = commit
        let commits = position.commit.flatMap { from in commit.map { $0 &- from } }
        var changes = ChangedRows.unknown
        let logged = now.sequence > position.sequence || now.lastChange > position.lastChange
        if commits == 0, !logged {
            changes = ChangedRows()    // no commit at all
        } else if now.prunedThrough > position.sequence || !logged {
            // Retention removed what is needed; or another connection
            // committed and logged nothing (it wrote untracked tables only, or
            // a tracked one without its triggers): every table is re-read.
        } else if now.sequence > position.sequence, let commits, let from = position.commit,
                  try everyCommitLogged(commits, after: (position.sequence, from), through: now.sequence, db) {
            changes = ChangedRows()
        } else {
            changes.knownTables = try trackedTables(db)
        }
        if now.schemaVersion != position.schemaVersion { changes.schemaChanged = true }
        guard logged, now.prunedThrough <= position.sequence else { return (changes, now) }
        // The transactions logged since, and the rows a foreign commit added
        // to the one that was newest then.
        let statement = try db.cachedStatement(sql: """
            SELECT tbl, row_id, old_row_id FROM sluice_change WHERE \(changesInRange)
            UNION ALL SELECT tbl, row_id, old_row_id FROM sluice_change
            WHERE id > max(?3, coalesce((SELECT first_change FROM sluice_transaction WHERE seq = ?1), 0) - 1) AND seq = ?1
            """)
        defer { statement.reset() }
        try statement.bind([.integer(position.sequence), .integer(now.sequence), .integer(position.lastChange)])
        var byTable: [String: Set<Int64>] = [:]
        while try statement.step() {
            guard case .text(let table) = statement.value(at: 0), case .integer(let rowID) = statement.value(at: 1) else { continue }
            byTable[table, default: []].insert(rowID)
            if case .integer(let oldRowID) = statement.value(at: 2) { byTable[table, default: []].insert(oldRowID) }
        }
        for (table, rowIDs) in byTable { changes.insert(rowIDs, in: table) }
        return (changes, now)
    }

    /// Whether the transactions logged after `after.sequence` through
    /// `sequence` are `commits` commits numbered one by one from `after.commit + 1`.
    private static func everyCommitLogged(_ commits: UInt32, after: (sequence: Int64, commit: UInt32), through sequence: Int64, _ db: Database) throws -> Bool {
        let last = UInt64(after.commit) + UInt64(commits)
        guard commits > 0, last <= UInt64(UInt32.max) else { return false }    // wrapped around: cannot tell
        let statement = try db.cachedStatement(sql: """
            SELECT count(*), count(commit_number), min(commit_number), max(commit_number) FROM sluice_transaction WHERE seq > ? AND seq <= ?
            """)
        defer { statement.reset() }
        try statement.bind([.integer(after.sequence), .integer(sequence)])
        guard try statement.step(), case .integer(let count) = statement.value(at: 0), case .integer(let numbered) = statement.value(at: 1),
              case .integer(let first) = statement.value(at: 2), case .integer(let final) = statement.value(at: 3) else { return false }
        return count == Int64(commits) && numbered == count && first == Int64(after.commit) + 1 && final == Int64(last)
    }
}
