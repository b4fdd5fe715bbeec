/// Builds every SELECT Sluice runs on a table: columns, filter, order (ties
/// broken by the primary key), limit, or one row by key. Column lists are
/// explicit, from the schema cache, so result positions never depend on
/// what `*` happens to expand to.
struct SelectBuilder {
    /// What the SELECT returns.
    enum Columns {
        /// Every column, in the table's order.
        case all
        /// The rowid (as `rowIDColumn`), then every column.
        case rowIDAndAll
        /// `count(*)`.
        case count
    }

    /// The name under which a rowid is selected next to the table's columns.
    static let rowIDColumn = "__sluice_rowid"

    let table: TableInfo
    var columns: Columns = .all
    var filter: Filter?
    /// nil: no ORDER BY; otherwise these orderings, then the primary key.
    var orderBy: [Ordering]?
    var limit: Int?
    /// Restricts to the row whose column (`rowid` or a key) equals the first argument.
    var keyColumn: String?

    init(table: TableInfo) {
        self.table = table
    }

    /// The SQL and its arguments (the key's value first, when `keyColumn` is set, is left to the caller).
    func build() throws -> (sql: String, arguments: [SQLiteValue]) {
        var sql = "SELECT "
        switch columns {
        case .all: sql += table.columns.map { quoteIdentifier($0.name) }.joined(separator: ", ")
        case .rowIDAndAll: sql += (["rowid AS \(Self.rowIDColumn)"] + table.columns.map { quoteIdentifier($0.name) }).joined(separator: ", ")
        case .count: sql += "count(*)"
        }
        sql += " FROM \(quoteIdentifier(table.name))"
        var conditions: [String] = []
        var arguments: [SQLiteValue] = []
        if let keyColumn {
            conditions.append(keyColumn == "rowid" ? "rowid = ?" : "\(quoteIdentifier(keyColumn)) = ?")
        }
        if let filter {
            let compiled = try FilterCompiler.compile(filter, table: table)
            conditions.append(keyColumn == nil ? compiled.sql : "(\(compiled.sql))")
            arguments += compiled.arguments
        }
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        if let orderBy {
            sql += " ORDER BY " + (try Self.orderTerms(table: table, orderBy: orderBy))
                .map { quoteIdentifier($0.column) + ($0.descending ? " DESC" : "") }.joined(separator: ", ")
        }
        if let limit {
            guard limit >= 0 else { throw StoreError(code: .invalidQuery, message: "limit must not be negative, got \(limit)") }
            sql += " LIMIT ?"
            arguments.append(.integer(Int64(limit)))
        }
        return (sql, arguments)
    }

    /// The ORDER BY terms: the orderings, checked against the table, then
    /// the primary key so that ties always come out in the same order.
    static func orderTerms(table: TableInfo, orderBy: [Ordering]) throws -> [(column: String, descending: Bool)] {
        var terms: [(column: String, descending: Bool)] = []
        var used = Set<String>()
        for ordering in orderBy {
            guard let column = table.column(named: ordering.column) else {
                let message = "unknown column '\(ordering.column)' in table \(table.name) (columns: \(table.columnNames.joined(separator: ", ")))"
                if let source = ordering.source, let position = ordering.position {
                    var error = QueryParser.error(message, in: source, at: position)
                    error.code = .unknownColumn
                    throw error
                }
                throw StoreError(code: .unknownColumn, message: message)
            }
            terms.append((column.name, ordering.descending))
            used.insert(column.name)
        }
        for key in table.primaryKey where !used.contains(key) {
            terms.append((key, false))
        }
        return terms
    }

    /// ` WHERE <filter>` with its arguments, or nothing without a filter
    /// (for DELETE and UPDATE statements).
    static func whereClause(_ filter: Filter?, table: TableInfo) throws -> (sql: String, arguments: [SQLiteValue]) {
        guard let filter else { return ("", []) }
        let compiled = try FilterCompiler.compile(filter, table: table)
        return (" WHERE " + compiled.sql, compiled.arguments)
    }
}
