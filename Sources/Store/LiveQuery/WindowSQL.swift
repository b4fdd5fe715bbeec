/// The SQL a window reads with: rows on one side of a sort key (a keyset
/// bound), nearest first; the row at a position; the anchor row; counts of
/// the result and of the rows before a bound. Rows come in the order of a
/// live query's sort keys (the orderings, the primary key, then the rowid),
/// which SQLite walks in an index on the filter's equality columns and the
/// sort columns, when the terms all go one way.
struct WindowSQL {
    let plan: QueryPlan
    /// The query's SELECT: filter and order, every column after the rowid.
    private let select: SelectBuilder

    /// Which side of a sort key.
    enum Side {
        /// Rows that come before it in the order, nearest first (read in reverse).
        case before
        /// Rows that come after it.
        case after
    }

    init(plan: QueryPlan, filter: Filter?, orderBy: [Ordering], db: Database) throws {
        guard plan.sortOrder != nil, plan.relevance == nil else {
            throw StoreError(code: .invalidQuery, message: "a window of \(plan.table.name) needs an order by columns that Sluice compares as SQLite does "
                             + "(BINARY, NOCASE or RTRIM collations, not a custom collation or relevance)")
        }
        var select = SelectBuilder(table: plan.table, schema: db.schemaLookup)
        select.columns = .rowIDAndAll
        select.filter = filter
        select.orderBy = orderBy
        select.tieBreakByRowID = true
        self.plan = plan
        self.select = select
    }

    /// Up to `limit` rows on `side` of `key` (of the whole result when nil),
    /// nearest first; `orEqual`: the row with the key itself too.
    func rows(_ side: Side, of key: SortKey?, orEqual: Bool, limit: Int) throws -> (sql: String, arguments: [SQLiteValue]) {
        var select = self.select
        select.reversed = side == .before
        select.limit = limit
        if let key { select.extraConditions = [bound(side, of: key, orEqual: orEqual)] }
        return try select.build()
    }

    /// The row at `offset` in the whole result: its rowid found first by a query of rowids
    /// alone, which SQLite answers from an index without reading the rows it skips (about
    /// half the time of skipping whole rows, 5,000,000 deep), then the row by its rowid.
    func row(at offset: Int) throws -> (sql: String, arguments: [SQLiteValue]) {
        var position = select
        position.columns = .rowID
        position.limit = 1
        position.offset = offset
        let (inner, innerArguments) = try position.build()
        var row = select
        row.filter = nil
        row.orderBy = nil
        row.extraConditions = [("\(select.qualifiedRowID) = (\(inner))", innerArguments)]
        return try row.build()
    }

    /// The row whose primary key is `key`, if it is in the result.
    func anchor(_ key: SQLiteValue) throws -> (sql: String, arguments: [SQLiteValue]) {
        var select = self.select
        select.orderBy = nil
        let table = plan.table
        if table.identityIsRowID {
            select.keyColumn = "rowid"
        } else if table.primaryKey.count == 1 {
            select.keyColumn = table.primaryKey[0]
        } else {
            throw StoreError(code: .invalidQuery, message: "a window around a row of \(table.name) needs a one-column primary key (it has \(table.primaryKey.joined(separator: ", ")))")
        }
        let built = try select.build()
        return (built.sql, [key] + built.arguments)
    }

    /// The result, or its rows before `key` (`orEqual`: and the row with it), to count
    /// (`Database.fetchCount`).
    func counted(before key: SortKey?, orEqual: Bool = false) -> SelectBuilder {
        var select = self.select
        if let key { select.extraConditions = [bound(.before, of: key, orEqual: orEqual)] }
        return select
    }

    // MARK: - The keyset bound

    /// The condition "comes before / after `key` in the order": for terms
    /// t1…tm and the rowid, t1 beyond v1 OR (t1 = v1 AND (t2 beyond v2 OR
    /// (… rowid beyond r))), with NULLs where SQLite sorts them (first
    /// ascending) and each column's own collation. The first term's range
    /// is repeated on its own, so that SQLite walks an index from there.
    func bound(_ side: Side, of key: SortKey, orEqual: Bool) -> (sql: String, arguments: [SQLiteValue]) {
        let wantsAfter = side == .after
        var sql = "\(select.qualifiedRowID) \(wantsAfter ? ">" : "<")\(orEqual ? "=" : "") ?"
        var arguments: [SQLiteValue] = [.integer(key.rowID)]
        let terms = plan.sortOrder?.terms ?? []
        for index in plan.orderColumns.indices.reversed() {
            let column = expression(plan.orderColumns[index])
            let value = key.value(at: index).sqliteValue(collation: terms[index].collation, encoding: plan.textEncoding)
            let greater = wantsAfter != terms[index].descending
            var beyond: (String, [SQLiteValue])
            let equal: (String, [SQLiteValue])
            if value == .null {
                beyond = greater ? ("\(column) IS NOT NULL", []) : ("0", [])
                equal = ("\(column) IS NULL", [])
            } else {
                beyond = greater ? ("\(column) > ?", [value]) : ("(\(column) < ? OR \(column) IS NULL)", [value])
                if !greater, isNotNull(plan.orderColumns[index]) { beyond = ("\(column) < ?", [value]) }
                equal = ("\(column) = ?", [value])
            }
            sql = "(\(beyond.0) OR (\(equal.0) AND \(sql)))"
            arguments = beyond.1 + equal.1 + arguments
        }
        // The first term's range alone, for the index.
        if let first = plan.orderColumns.first, key.first != .null {
            let value = key.first.sqliteValue(collation: terms[0].collation, encoding: plan.textEncoding)
            let greater = wantsAfter != terms[0].descending
            if greater {
                sql = "\(expression(first)) >= ? AND \(sql)"
                arguments.insert(value, at: 0)
            } else if isNotNull(first) {
                sql = "\(expression(first)) <= ? AND \(sql)"
                arguments.insert(value, at: 0)
            }
        }
        return (sql, arguments)
    }

    /// A result column (0: the rowid) as an SQL expression.
    private func expression(_ column: Int32) -> String {
        column == 0 ? select.qualifiedRowID : quoteIdentifier(plan.table.columns[Int(column) - 1].name)
    }

    private func isNotNull(_ column: Int32) -> Bool {
        column == 0 || plan.table.columns[Int(column) - 1].isNotNull
    }
}
