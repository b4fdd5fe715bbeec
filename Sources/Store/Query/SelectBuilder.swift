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
        /// The rowid alone (what an index that holds the filter's and the order's columns answers by itself).
        case rowID
    }

    /// The name under which a rowid is selected next to the table's columns.
    static let rowIDColumn = "__sluice_rowid"
    /// The name under which `.rowIDAndAll` selects the score of an ordering
    /// by relevance, after the table's columns.
    static let scoreColumn = "__sluice_score"

    let table: TableInfo
    var columns: Columns = .all
    var filter: Filter?
    /// nil: no ORDER BY; otherwise these orderings, then the primary key.
    var orderBy: [Ordering]?
    var limit: Int?
    /// Rows to skip (with or without a limit).
    var offset: Int?
    /// Columns whose combination of values each row must be the first of
    /// (in the order; ties by primary key): Realm's `distinct(by:)`.
    var distinct: [String] = []
    /// Whether the order (terms and tie-breaking key alike) is reversed: the last rows first.
    var reversed = false
    /// Restricts to the row whose column (`rowid` or a key) equals the first argument.
    var keyColumn: String?
    /// More conditions, ANDed after the filter's, with their arguments (a window's keyset bound).
    var extraConditions: [(sql: String, arguments: [SQLiteValue])] = []
    /// Whether the rowid breaks ties last (after the primary key, when that is not the rowid):
    /// the order a live query's sort keys have.
    var tieBreakByRowID = false

    /// Where relationship paths in the filter find other tables.
    var schema: SchemaLookup?

    init(table: TableInfo, schema: SchemaLookup? = nil) {
        self.table = table
        self.schema = schema
    }

    /// The table's rowid, qualified: a relevance ordering joins another table.
    var qualifiedRowID: String { quoteIdentifier(table.name) + ".rowid" }

    /// The SQL and its arguments (the key's value first, when `keyColumn` is set, is left to the caller).
    func build() throws -> (sql: String, arguments: [SQLiteValue]) {
        var sql = "SELECT "
        let terms = try orderBy.map { try Self.orderTerms(table: table, orderBy: $0, schema: schema) }
        switch columns {
        case .all: sql += table.columns.map { quoteIdentifier($0.name) }.joined(separator: ", ")
        case .rowIDAndAll:
            sql += (["\(qualifiedRowID) AS \(Self.rowIDColumn)"] + table.columns.map { quoteIdentifier($0.name) }).joined(separator: ", ")
            // A live query keeps each row's score in its sort key.
            if let relevance = terms?.first(where: { $0.join != nil }) { sql += ", \(relevance.sql) AS \(Self.scoreColumn)" }
        case .count: sql += "count(*)"
        case .rowID: sql += qualifiedRowID
        }
        sql += " FROM \(quoteIdentifier(table.name))"
        var arguments: [SQLiteValue] = []
        var filter = self.filter
        if columns != .count, let joins = terms?.compactMap(\.join), !joins.isEmpty {
            guard joins.count == 1 else { throw StoreError(code: .invalidQuery, message: "order by relevance to one full-text query at most") }
            // Matching the same query as a filter: the join keeps only the matches.
            var inner = false
            if let (rest, removed) = filter?.removingMatch(joins[0].query), removed {
                filter = rest
                inner = true
            }
            sql += (inner ? " JOIN " : " LEFT JOIN ") + joins[0].sql
            arguments += joins[0].arguments
        }
        var conditions: [String] = []
        if let keyColumn {
            conditions.append(keyColumn == "rowid" ? "\(qualifiedRowID) = ?" : "\(quoteIdentifier(keyColumn)) = ?")
        }
        if let filter {
            let compiled = try FilterCompiler.compile(filter, table: table, schema: schema, oneRow: keyColumn?.lowercased() == "rowid")
            conditions.append(keyColumn == nil ? compiled.sql : "(\(compiled.sql))")
            arguments += compiled.arguments
        }
        if !distinct.isEmpty {
            let (condition, distinctArguments) = try distinctCondition()
            conditions.append(condition)
            arguments += distinctArguments
        }
        for condition in extraConditions {
            conditions.append("(\(condition.sql))")
            arguments += condition.arguments
        }
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        if let terms, columns != .count {   // a count's order only matters to `distinct`
            sql += " ORDER BY " + terms.map { $0.sql + ($0.descending != reversed ? " DESC" : "") }.joined(separator: ", ")
            if tieBreakByRowID, !table.hasIntegerPrimaryKey { sql += ", \(qualifiedRowID)" + (reversed ? " DESC" : "") }
        }
        if let limit, limit < 0 {
            throw StoreError(code: .invalidQuery, message: "limit must not be negative, got \(limit)")
        }
        if limit != nil || offset != nil {
            sql += " LIMIT ?"
            arguments.append(.integer(Int64(limit ?? -1)))   // -1: no limit, for an offset alone
            if let offset {
                sql += " OFFSET ?"
                arguments.append(.integer(Int64(offset)))
            }
        }
        return (sql, arguments)
    }

    /// `rowid IN (...)`: the rows that come first, in the order, among those
    /// with the same values in the distinct columns (NULLs are one value).
    private func distinctCondition() throws -> (String, [SQLiteValue]) {
        let partition = try distinct.map { name in
            guard let column = table.column(named: name) else {
                throw StoreError(code: .unknownColumn, message: "unknown column '\(name)' in distinct for table \(table.name) (columns: \(table.columnNames.joined(separator: ", ")))")
            }
            return quoteIdentifier(column.name)
        }
        let order = try orderList(orderBy ?? [], reversed: false) + ", rowid"
        let (filterSQL, arguments) = try Self.whereClause(filter, table: table, schema: schema)
        let sql = "\(qualifiedRowID) IN (SELECT __sluice_r FROM (SELECT rowid AS __sluice_r, row_number() OVER (PARTITION BY "
            + partition.joined(separator: ", ") + " ORDER BY " + order + ") AS __sluice_n FROM "
            + quoteIdentifier(table.name) + filterSQL + ") WHERE __sluice_n = 1)"
        return (sql, arguments)
    }

    /// `"a", "b" DESC, "id"`: the ORDER BY terms as SQL, optionally reversed.
    private func orderList(_ orderBy: [Ordering], reversed: Bool) throws -> String {
        let terms = try Self.orderTerms(table: table, orderBy: orderBy, schema: schema)
        if terms.contains(where: { $0.join != nil }) {
            throw StoreError(code: .invalidQuery, message: "distinct cannot be combined with an ordering by relevance")
        }
        return terms.map { $0.sql + ($0.descending != reversed ? " DESC" : "") }.joined(separator: ", ")
    }

    /// One ORDER BY term: a column, or relevance (a score its join selects).
    struct OrderTerm {
        /// The column, nil for relevance.
        let column: String?
        let sql: String
        /// What the FROM clause joins for the term (relevance: the matches'
        /// scores, and the ON clause), with its arguments and the query.
        let join: (sql: String, arguments: [SQLiteValue], query: String)?
        let descending: Bool
        /// For relevance: the quoted index table, and the arguments of its
        /// `bm25` (the index, then the column weights).
        var scoring: (index: String, arguments: String)?
        /// For relevance: the value that stands for "no score" (a row that
        /// does not match), last in the term's direction.
        var missingScore: Double?
    }

    /// The ORDER BY terms: the orderings, checked against the table, then
    /// the primary key so that ties always come out in the same order.
    static func orderTerms(table: TableInfo, orderBy: [Ordering], schema: SchemaLookup?) throws -> [OrderTerm] {
        var terms: [OrderTerm] = []
        var used = Set<String>()
        for ordering in orderBy {
            if let relevance = ordering.relevance {
                terms.append(try relevanceTerm(relevance, table: table, schema: schema, descending: ordering.descending))
                continue
            }
            guard let column = table.column(named: ordering.column) else {
                let message = "unknown column '\(ordering.column)' in table \(table.name) (columns: \(table.columnNames.joined(separator: ", ")))"
                if let source = ordering.source, let position = ordering.position {
                    var error = QueryParser.error(message, in: source, at: position)
                    error.code = .unknownColumn
                    throw error
                }
                throw StoreError(code: .unknownColumn, message: message)
            }
            terms.append(OrderTerm(column: column.name, sql: columnSQL(column.name, table), join: nil, descending: ordering.descending))
            used.insert(column.name)
        }
        for key in table.primaryKey where !used.contains(key) {
            terms.append(OrderTerm(column: key, sql: columnSQL(key, table), join: nil, descending: false))
        }
        return terms
    }

    /// A column in an ORDER BY: the rowid qualified (a join may come with it).
    private static func columnSQL(_ name: String, _ table: TableInfo) -> String {
        name.lowercased() == "rowid" ? quoteIdentifier(table.name) + ".rowid" : quoteIdentifier(name)
    }

    /// `bm25` of the row in the table's full-text index for the query (NULL,
    /// last, for a row that does not match).
    private static func relevanceTerm(_ relevance: Ordering.Relevance, table: TableInfo, schema: SchemaLookup?,
                                      descending: Bool) throws -> OrderTerm {
        guard let schema, let indexed = try schema.fullTextColumns(table.name) else {
            throw StoreError(code: .invalidQuery, message: "table \(table.name) has no full-text index to order by relevance: "
                             + "declare one in a migration (.fullTextIndex(version:_:))")
        }
        for name in relevance.weights.keys where !indexed.contains(where: { $0.lowercased() == name.lowercased() }) {
            throw StoreError(code: .invalidQuery, message: "column '\(name)' is not in the full-text index of \(table.name) (indexed: \(indexed.joined(separator: ", ")))")
        }
        let index = FullTextNaming.indexTable(for: table.name)
        if let problem = schema.fullTextProblem(index, nil, relevance.query) {
            throw StoreError(code: .invalidQuery, message: "invalid full-text query to order by relevance: \(FilterCompiler.fullTextMessage(problem))")
        }
        let weights = indexed.map { column in
            relevance.weights.first { $0.key.lowercased() == column.lowercased() }?.value ?? 1
        }
        let fts = quoteIdentifier(index)
        let arguments = fts + weights.map { ", \($0)" }.joined()
        let score = "bm25(\(arguments))"
        // The scores of the matching rows, computed once and joined (a
        // correlated subquery per row ran the match again for each: 19×
        // slower at 1,000 matches). Rows that do not match (no score) come
        // last whatever the direction: an infinite score (1e999 is +Inf in
        // SQLite), a plain REAL that Swift compares as SQLite does.
        let join = "(SELECT rowid AS __sluice_rank_rowid, \(score) AS __sluice_rank "
            + "FROM \(fts) WHERE \(fts) MATCH ?) ON __sluice_rank_rowid = \(quoteIdentifier(table.name)).rowid"
        var term = OrderTerm(column: nil, sql: "coalesce(__sluice_rank, \(descending ? "-" : "")1e999)",
                             join: (join, [.text(relevance.query)], relevance.query), descending: descending)
        term.scoring = (fts, arguments)
        term.missingScore = descending ? -.infinity : .infinity
        return term
    }

    /// ` WHERE <filter>` with its arguments, or nothing without a filter
    /// (for DELETE and UPDATE statements).
    static func whereClause(_ filter: Filter?, table: TableInfo, schema: SchemaLookup? = nil) throws -> (sql: String, arguments: [SQLiteValue]) {
        guard let filter else { return ("", []) }
        let compiled = try FilterCompiler.compile(filter, table: table, schema: schema)
        return (" WHERE " + compiled.sql, compiled.arguments)
    }
}
