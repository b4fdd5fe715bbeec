import CSQLite

/// How a live query reads its rows, resolved against the schema.
struct QueryPlan {
    let table: TableInfo
    /// `SELECT rowid, * FROM t [WHERE f] ORDER BY ... [LIMIT n]`.
    let fullSQL: String
    let fullArguments: [SQLiteValue]
    /// `SELECT rowid, * FROM t WHERE rowid = ? [AND (f)]`: one row, with the
    /// filter evaluated by SQLite itself.
    let pointSQL: String
    let pointArguments: [SQLiteValue]   // the filter's, after the rowid
    /// Result columns of the ORDER BY terms (0 is the rowid).
    let orderColumns: [Int32]
    /// How Swift compares sort keys, or nil when it cannot do so exactly as
    /// SQLite (a custom collation): then every change re-runs the query.
    let sortOrder: SortOrder?
    /// Result columns whose values decide whether a row is "modified".
    let fingerprintColumns: [Int32]
    let hasLimit: Bool

    /// Whether changes can be applied row by row.
    var isIncremental: Bool { sortOrder != nil && !hasLimit }

    static let rowIDColumn = "__sluice_rowid"

    init(db: Database, table name: String, filter: Filter?, orderBy: [Ordering], limit: Int?, keyPaths: [String]?) throws {
        let table = try db.tableInfo(name)
        self.table = table
        let quoted = quoteIdentifier(table.name)
        var whereSQL = ""
        var arguments: [SQLiteValue] = []
        if let filter {
            let compiled = try FilterCompiler.compile(filter, table: table)
            whereSQL = compiled.sql
            arguments = compiled.arguments
        }
        let order = try db.orderClause(table: table, orderBy: orderBy)
        var full = "SELECT rowid AS \(Self.rowIDColumn), * FROM \(quoted)"
        if !whereSQL.isEmpty { full += " WHERE " + whereSQL }
        full += " ORDER BY " + order
        var fullArguments = arguments
        if let limit {
            full += " LIMIT ?"
            fullArguments.append(.integer(Int64(limit)))
        }
        fullSQL = full
        self.fullArguments = fullArguments
        pointSQL = "SELECT rowid AS \(Self.rowIDColumn), * FROM \(quoted) WHERE rowid = ?" + (whereSQL.isEmpty ? "" : " AND (\(whereSQL))")
        pointArguments = arguments
        hasLimit = limit != nil

        // ORDER BY terms: the orderings, then the primary key (as orderClause).
        var terms: [(column: String, descending: Bool)] = []
        var used = Set<String>()
        for ordering in orderBy {
            guard let column = table.column(named: ordering.column) else { continue }
            terms.append((column.name, ordering.descending))
            used.insert(column.name)
        }
        for key in table.primaryKey where !used.contains(key) { terms.append((key, false)) }
        var columns: [Int32] = []
        var sortTerms: [SortOrder.Term] = []
        var comparable = true
        for term in terms {
            if term.column == "rowid" {
                columns.append(0)
                sortTerms.append(.init(descending: term.descending, collation: .binary))
                continue
            }
            guard let index = table.columns.firstIndex(where: { $0.name == term.column }) else { comparable = false; continue }
            columns.append(Int32(index + 1))
            guard let collation = SortOrder.Collation(name: db.collation(table: table.name, column: term.column)) else {
                comparable = false
                continue
            }
            sortTerms.append(.init(descending: term.descending, collation: collation))
        }
        orderColumns = columns
        sortOrder = comparable ? SortOrder(terms: sortTerms) : nil

        if let keyPaths {
            fingerprintColumns = try keyPaths.map { name in
                guard let index = table.columns.firstIndex(where: { $0.name.lowercased() == name.lowercased() }) else {
                    throw StoreError(code: .unknownColumn, message: "unknown column '\(name)' in keyPaths for table \(table.name) (columns: \(table.columnNames.joined(separator: ", ")))")
                }
                return Int32(index + 1)
            }
        } else {
            fingerprintColumns = (0..<table.columns.count).map { Int32($0 + 1) }
        }
    }

    /// The sort key of the statement's current row.
    func sortKey(of statement: Statement) -> SortKey {
        let rowID = sqlite3_column_int64(statement.handle, 0)
        var first = SQLiteValue.null
        var rest: [SQLiteValue] = []
        for (offset, column) in orderColumns.enumerated() {
            let value = statement.value(at: column)
            if offset == 0 { first = value } else { rest.append(value) }
        }
        return SortKey(first: first, rest: rest, rowID: rowID)
    }

    /// A hash of the row's observed values, to tell whether it changed.
    func fingerprint(of statement: Statement) -> Int {
        var hasher = Hasher()
        let handle = statement.handle
        for column in fingerprintColumns {
            let type = sqlite3_column_type(handle, column)
            hasher.combine(type)
            switch type {
            case SQLITE_INTEGER: hasher.combine(sqlite3_column_int64(handle, column))
            case SQLITE_FLOAT: hasher.combine(sqlite3_column_double(handle, column).bitPattern)
            case SQLITE_TEXT, SQLITE_BLOB:
                let pointer = type == SQLITE_TEXT ? UnsafeRawPointer(sqlite3_column_text(handle, column)) : sqlite3_column_blob(handle, column)
                let count = Int(sqlite3_column_bytes(handle, column))
                hasher.combine(count)
                if let pointer { hasher.combine(bytes: UnsafeRawBufferPointer(start: pointer, count: count)) }
            default: break
            }
        }
        return hasher.finalize()
    }
}

extension Database {
    /// The collating sequence of a column, as SQLite reports it.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/c3ref/table_column_metadata.html>
    func collation(table: String, column: String) -> String? {
        var type: UnsafePointer<CChar>?
        var collation: UnsafePointer<CChar>?
        var notNull: Int32 = 0, primaryKey: Int32 = 0, autoIncrement: Int32 = 0
        let code = sqlite3_table_column_metadata(connection.handle, nil, table, column, &type, &collation, &notNull, &primaryKey, &autoIncrement)
        guard code == SQLITE_OK, let collation else { return nil }
        return String(cString: collation)
    }
}
