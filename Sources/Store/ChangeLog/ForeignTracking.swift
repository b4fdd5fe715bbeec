/// Installs and removes the triggers through which writers that are not
/// Sluice (the `sqlite3` shell, other tools) fill the change log.
enum ForeignTracking {
    /// The tables with foreign-writer triggers, as named in the schema.
    static func trackedTables(_ db: Database) throws -> [String] {
        let tracked = try ChangeLog.trackedTables(db)
        return try db.tableNames().filter { tracked.contains($0.lowercased()) }
    }

    /// Installs (or refreshes) the triggers of `tables`.
    ///
    /// - Throws: `.unknownTable`, `.unsupportedTable` for a view, virtual or
    ///   `WITHOUT ROWID` table; nothing is installed then.
    static func track(_ tables: [String], _ db: Database) throws {
        try ChangeLog.create(db)
        let infos = try tables.map { name in
            let info = try db.tableInfo(name)
            if info.name.lowercased().hasPrefix("sluice_") {
                throw StoreError(code: .unsupportedTable, message: "\(info.name) is one of Sluice's own tables; it is not tracked")
            }
            try info.checkObservable()
            return info
        }
        for info in infos {
            try untrack(info.name, db)
            for sql in LogTriggers.sql(for: info, temporary: false) {
                try db.execute(script: sql)
            }
        }
    }

    /// Removes the triggers of one table (and nothing else).
    static func untrack(_ table: String, _ db: Database) throws {
        for operation in LogTriggers.operations {
            try db.execute(script: "DROP TRIGGER IF EXISTS \(quoteIdentifier(LogTriggers.name(table: table, operation: operation, temporary: false)))")
        }
        for operation in ["insert", "update"] {
            try db.execute(script: "DROP TRIGGER IF EXISTS \(quoteIdentifier(LogTriggers.replaceTriggerName(table: table, operation: operation)))")
        }
    }

    /// Tracked tables whose triggers do not log exactly their columns of
    /// now: installed by an earlier version (without the BEFORE triggers
    /// that let them log what REPLACE deletes), or before another writer
    /// added or renamed a column (`ALTER TABLE` by the shell: the triggers
    /// list the columns of the time, and a rename keeps the old name in
    /// the log's keys).
    static func outdatedTables(_ db: Database) throws -> [String] {
        let tracked = try trackedTables(db)
        guard !tracked.isEmpty else { return [] }
        var installed: [String: String] = [:]
        for row in try db.fetchRows(sql: """
            SELECT lower(name), sql FROM sqlite_schema WHERE type = 'trigger' AND (name LIKE 'sluice\\_log\\_%' ESCAPE '\\' OR name LIKE 'sluice\\_replace\\_%' ESCAPE '\\')
            """) {
            if let name = String(sqliteValue: row[0]), let sql = String(sqliteValue: row[1]) { installed[name] = sql }
        }
        return try tracked.filter { table in
            let info = try db.tableInfo(table)
            let expected = LogTriggers.named(for: info)
            return expected.contains { name, sql in installed[name.lowercased()].map(normalized) != normalized(sql) }
        }
    }

    /// A trigger's SQL as `sqlite_schema` keeps it (without `IF NOT EXISTS`), spaces folded.
    private static func normalized(_ sql: String) -> String {
        sql.replacingOccurrences(of: "CREATE TRIGGER IF NOT EXISTS ", with: "CREATE TRIGGER ")
            .split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// Installs again the triggers of tracked tables that are outdated
    /// (`outdatedTables`), in the caller's transaction; returns those tables.
    @discardableResult
    static func refreshOutdated(_ db: Database) throws -> [String] {
        let outdated = try outdatedTables(db)
        guard !outdated.isEmpty else { return [] }
        try track(outdated, db)
        return outdated
    }

    /// Runs `body` (a migration) with the triggers of tracked tables removed,
    /// since SQLite refuses to drop a column a trigger names; then installs
    /// them again, with the columns the tables have now, on the tables that remain.
    static func preserving(_ db: Database, _ body: () throws -> Void) throws {
        let tracked = try trackedTables(db)
        guard !tracked.isEmpty else { return try body() }
        for table in tracked { try untrack(table, db) }
        try body()
        db.refreshSchemaIfChanged()
        let remaining = Set(try db.tableNames().map { $0.lowercased() })
        try track(tracked.filter { remaining.contains($0.lowercased()) }, db)
    }
}
