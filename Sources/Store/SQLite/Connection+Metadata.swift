import CSQLite

/// What the SQLite library and a connection's schema report through the C API.
extension Connection {
    /// The version of the SQLite library (`3.40.1`).
    static var libraryVersion: String { String(cString: sqlite3_libversion()) }

    /// The collating sequence of a column of the main database, as SQLite
    /// reports it; nil when there is no such column.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/c3ref/table_column_metadata.html>
    func collation(table: String, column: String) -> String? {
        var type: UnsafePointer<CChar>?
        var collation: UnsafePointer<CChar>?
        var notNull: Int32 = 0, primaryKey: Int32 = 0, autoIncrement: Int32 = 0
        let code = sqlite3_table_column_metadata(handle, nil, table, column, &type, &collation, &notNull, &primaryKey, &autoIncrement)
        guard code == SQLITE_OK, let collation else { return nil }
        return String(cString: collation)
    }
}
