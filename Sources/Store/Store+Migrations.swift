extension Store {
    /// Applies the migrations the database has not applied yet, in version
    /// order, each in its own transaction, and returns them.
    ///
    /// - Throws: `.migration` when an applied migration's SQL changed (its
    ///   checksum differs), an applied migration is missing from `migrations`,
    ///   or a migration fails (the database stays at the previous version);
    ///   `.databaseTooNew` when the database has migrations newer than these.
    ///
    /// - Parameter migrations: every migration of the app, in any order.
    /// - Returns: the migrations applied now, in version order.
    @discardableResult
    public func migrate(_ migrations: [Migration]) throws -> [Migration] {
        try migrate(migrations, recordedIn: Migrator.table)
    }

    /// Applies migrations of a track of their own: the tables of a library
    /// that shares the app's database (as the sync client does with its
    /// `sluice_sync_*` tables), numbered and recorded apart from the app's
    /// migrations, so that each side adds versions without knowing the other's.
    ///
    /// ```swift
    /// try store.migrate([
    ///     Migration(version: 1, name: "bookmarks", sql: "CREATE TABLE reader_bookmark (...)"),
    /// ], recordedIn: "reader_migration")
    /// ```
    ///
    /// The same rules hold as for the app's migrations: an applied migration
    /// whose SQL changed is refused, and a database whose track holds a
    /// version newer than these throws `.databaseTooNew` (a file written by a
    /// newer version of the library).
    ///
    /// - Parameters:
    ///   - migrations: every migration of the track, in any order.
    ///   - table: the track's bookkeeping table (letters, digits and `_`;
    ///     the app's track is `sluice_migration`).
    /// - Returns: the migrations applied now, in version order.
    /// - Throws: `.invalidUse` for a bookkeeping table name that is not a
    ///   plain identifier; otherwise as ``migrate(_:)``.
    @discardableResult
    public func migrate(_ migrations: [Migration], recordedIn table: String) throws -> [Migration] {
        guard !table.isEmpty, table.first.map({ !$0.isNumber }) ?? false,
              table.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
            throw StoreError(code: .invalidUse, message: "a migration track's table must be a plain identifier (letters, digits, _), not \"\(table)\"")
        }
        return try migrate(with: Migrator(migrations: migrations, table: table))
    }

    /// The migrations recorded as applied in the database, by version.
    ///
    /// - Parameter table: the track's bookkeeping table (the app's unless given).
    /// - Returns: each applied migration's version, name and checksum, in version order.
    /// - Throws: `StoreError` when the bookkeeping table cannot be read.
    public func appliedMigrations(recordedIn table: String = "sluice_migration") throws -> [AppliedMigration] {
        try read { db in try Migrator.applied(in: db, table: table) }
    }
}
