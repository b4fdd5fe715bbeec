/// Applies migrations to a writer connection and checks the recorded ones.
struct Migrator {
    /// The app's migrations' bookkeeping table.
    static let table = "sluice_migration"
    let migrations: [Migration]
    /// Where the applied migrations are recorded: the app's table, or a track of its own
    /// (a library's tables, such as the sync client's).
    let table: String
    /// Runs each migration's SQL (in its transaction): lets the store take
    /// the change log's foreign-writer triggers off and put them back.
    var around: (Database, () throws -> Void) throws -> Void = { _, body in try body() }

    init(migrations: [Migration], table: String = Migrator.table) {
        self.migrations = migrations.sorted { $0.version < $1.version }
        self.table = table
    }

    static func applied(in db: Database, table: String = Migrator.table) throws -> [AppliedMigration] {
        guard try db.tableExists(table) else { return [] }
        return try db.fetchRows(sql: "SELECT version, name, checksum, applied_at FROM \(table) ORDER BY version").map { row in
            AppliedMigration(
                version: try row.value("version", as: Int.self),
                name: try row.value("name", as: String.self),
                checksum: try row.value("checksum", as: String.self),
                appliedAt: try row.value("applied_at", as: String.self))
        }
    }

    /// Checks what is applied, then applies the rest, each in a transaction.
    func migrate(_ db: Database) throws -> [Migration] {
        if let duplicate = Dictionary(grouping: migrations, by: \.version).first(where: { $0.value.count > 1 }) {
            throw StoreError(code: .migration, message: "two migrations have version \(duplicate.key): \(duplicate.value.map(\.identifier).joined(separator: ", "))")
        }
        try db.inTransaction {
            try db.execute(script: """
                CREATE TABLE IF NOT EXISTS \(table) (
                    version INTEGER PRIMARY KEY,
                    name TEXT NOT NULL,
                    checksum TEXT NOT NULL,
                    applied_at TEXT NOT NULL
                )
                """)
        }

        let applied = try Self.applied(in: db, table: table)
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        // Another set altogether (not one edited migration): say so, naming both.
        if applied.contains(where: { record in known[record.version].map { $0.name != record.name } ?? false }) {
            func list(_ names: [String]) -> String { names.count > 6 ? names.prefix(6).joined(separator: ", ") + ", ..." : names.joined(separator: ", ") }
            throw StoreError(code: .migration, message: """
                the database was migrated with a different set of migrations: it has applied \(list(applied.map(\.identifier))); \
                the migrations given are \(list(migrations.map(\.identifier))). Use the migrations this database was made with, or a new database
                """)
        }
        let newestKnown = migrations.last?.version ?? 0
        for record in applied {
            guard let migration = known[record.version] else {
                if record.version > newestKnown {
                    throw StoreError(code: .databaseTooNew, message: "the database is at migration \(record.version) (\(record.name)), newer than this code, which knows migrations up to \(newestKnown); use a newer version of the app")
                }
                throw StoreError(code: .migration, message: "the database has applied migration \(record.version) (\(record.name)), which is missing from this code's migrations")
            }
            guard migration.checksum == record.checksum else {
                throw StoreError(code: .migration, message: "migration \(migration.identifier).sql was changed after it was applied (checksum \(record.checksum) when applied, \(migration.checksum) now); add a new migration instead of editing an applied one")
            }
        }

        let appliedVersions = Set(applied.map(\.version))
        var done: [Migration] = []
        for migration in migrations where !appliedVersions.contains(migration.version) {
            do {
                try db.inTransaction(author: "migration") {
                    try around(db) { try migration.apply(on: db) }
                    try db.execute(
                        sql: "INSERT INTO \(table) (version, name, checksum, applied_at) VALUES (?, ?, ?, strftime('%Y-%m-%d %H:%M:%f', 'now'))",
                        arguments: [.integer(Int64(migration.version)), .text(migration.name), .text(migration.checksum)])
                }
            } catch let error as StoreError {
                throw StoreError(code: .migration, extendedCode: error.extendedCode,
                                 message: "migration \(migration.identifier).sql failed, the database stays at the previous version: \(error.message)")
            }
            done.append(migration)
        }
        return done
    }
}
