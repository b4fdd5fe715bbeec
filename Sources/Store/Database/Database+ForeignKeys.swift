/// A row whose foreign key points at no row, as `PRAGMA foreign_key_check` reports it.
public struct ForeignKeyViolation: Sendable, Hashable {
    /// The table of the row with the broken reference.
    public let table: String
    /// That row's rowid.
    public let rowID: Int64
    /// The table it should reference.
    public let parent: String
}

extension Database {
    /// Defers foreign-key checks to the end of the current transaction, so
    /// rows can be inserted in any order (children before parents).
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/pragma.html#pragma_defer_foreign_keys>
    ///
    /// - Throws: `StoreError` when the pragma fails.
    public func deferForeignKeys() throws {
        try execute(sql: "PRAGMA defer_foreign_keys = ON")
    }

    /// The rows whose foreign keys point at no row, in the whole database.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/pragma.html#pragma_foreign_key_check>
    ///
    /// - Returns: each violation: the table, the rowid, the table it points to.
    /// - Throws: `StoreError` when the check cannot run.
    /// - Complexity: a scan of every table with foreign keys.
    public func foreignKeyViolations() throws -> [ForeignKeyViolation] {
        try fetchRows(sql: "PRAGMA foreign_key_check").compactMap { row in
            guard let table = String(sqliteValue: row[0]), let parent = String(sqliteValue: row[2]) else { return nil }
            return ForeignKeyViolation(table: table, rowID: Int64(sqliteValue: row[1]) ?? 0, parent: parent)
        }
    }
}
