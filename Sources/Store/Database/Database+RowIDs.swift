extension Database {
    /// The rowids of a table's rows that a filter keeps (all of them without one): what a
    /// caller that works by rowid (sync, a bulk operation) compares sets of rows with.
    ///
    /// - Parameters:
    ///   - table: the table's name.
    ///   - filter: which rows; all of them when nil.
    /// - Returns: the rowids, ascending.
    /// - Throws: `StoreError` naming an unknown table or column, or a failed read.
    public func rowIDs(table: String, filter: Filter? = nil) throws -> [Int64] {
        let info = try tableInfo(table)
        let (condition, arguments) = try SelectBuilder.whereClause(filter, table: info, schema: schemaLookup)
        let name = quoteIdentifier(info.name)
        return try fetchRows(sql: "SELECT \(name).rowid FROM \(name)\(condition) ORDER BY 1", arguments: arguments).compactMap { row in
            if case .integer(let rowID) = row[0] { rowID } else { nil }
        }
    }
}
