extension Database {
    /// Fills a table's full-text index again from the table's rows: after
    /// the index was changed by hand, or to drop entries of rows a `REPLACE`
    /// deleted under another unique key (see `FullTextIndex`).
    ///
    /// - Parameter table: the indexed table.
    /// - Throws: `StoreError.Code.notFound` when the table has no full-text index.
    /// - Complexity: O(n) rows read and indexed.
    public func rebuildFullTextIndex(on table: String) throws {
        let (index, columns) = try fullTextColumns(table: table)
        let info = try tableInfo(table)
        let names = columns.map(quoteIdentifier).joined(separator: ", ")
        try execute(script: """
            DELETE FROM \(quoteIdentifier(index));
            INSERT INTO \(quoteIdentifier(index)) (rowid, \(names)) SELECT rowid, \(names) FROM \(quoteIdentifier(info.name));
            """)
    }

    /// A column of a matching row with the query's matches marked: for
    /// showing why a row was found (FTS5's `highlight`).
    ///
    /// ```swift
    /// try store.read { db in try db.highlight(table: "person", rowID: 7, column: "city", matching: "oslo", open: "**", close: "**") }
    /// // "**Oslo** sentrum"
    /// ```
    ///
    /// - Parameters:
    ///   - table: the indexed table.
    ///   - rowID: the row.
    ///   - column: one of the index's columns.
    ///   - query: the full-text query, in FTS5's syntax.
    ///   - open: put before each match.
    ///   - close: put after each match.
    /// - Returns: the column's text with the matches marked, or nil when the row does not match.
    /// - Throws: `StoreError` (`.notFound` without an index, `.invalidQuery`
    ///   for a column not in it or a query FTS5 cannot parse).
    /// - Complexity: one lookup of the row in the index: O(t log n) for t query terms.
    public func highlight(table: String, rowID: Int64, column: String, matching query: String,
                          open: String = "[", close: String = "]") throws -> String? {
        let (index, position) = try fullTextColumn(table: table, column: column)
        return try fullTextMarkup("highlight(\(quoteIdentifier(index)), \(position), ?, ?)", index: index, arguments: [.text(open), .text(close)],
                                  query: query, rowID: rowID)
    }

    /// The part of a matching row's text around its matches, the matches
    /// marked: for a search result's preview (FTS5's `snippet`).
    ///
    /// - Parameters:
    ///   - table: the indexed table.
    ///   - rowID: the row.
    ///   - column: one of the index's columns; nil lets FTS5 choose the column that matches best.
    ///   - query: the full-text query, in FTS5's syntax.
    ///   - open: put before each match.
    ///   - close: put after each match.
    ///   - ellipsis: put where text is left out.
    ///   - tokens: the most tokens the snippet holds (1 to 64).
    /// - Returns: the snippet, or nil when the row does not match.
    /// - Throws: as `highlight(table:rowID:column:matching:open:close:)`.
    /// - Complexity: one lookup of the row in the index.
    public func snippet(table: String, rowID: Int64, column: String? = nil, matching query: String,
                        open: String = "[", close: String = "]", ellipsis: String = "…", tokens: Int = 10) throws -> String? {
        let (index, position) = try column.map { try fullTextColumn(table: table, column: $0) } ?? (try fullTextColumns(table: table).index, -1)
        return try fullTextMarkup("snippet(\(quoteIdentifier(index)), \(position), ?, ?, ?, ?)", index: index,
                                  arguments: [.text(open), .text(close), .text(ellipsis), .integer(Int64(min(64, max(1, tokens))))],
                                  query: query, rowID: rowID)
    }

    /// The columns of a table's full-text index, nil when it has none (what
    /// filters' `MATCH` and relevance orderings ask through `schemaLookup`).
    func fullTextIndexColumns(of table: String) throws -> [String]? {
        let index = FullTextNaming.indexTable(for: table)
        guard try tableExists(index) else { return nil }
        return try tableInfo(index).columns.map(\.name)
    }

    /// A table's full-text index and its columns.
    private func fullTextColumns(table: String) throws -> (index: String, columns: [String]) {
        let index = FullTextNaming.indexTable(for: table)
        guard let columns = try fullTextIndexColumns(of: table) else {
            throw StoreError(code: .notFound, message: "table \(table) has no full-text index (\(index))")
        }
        return (index, columns)
    }

    /// The index of `table` and the position of `column` in it.
    private func fullTextColumn(table: String, column: String) throws -> (index: String, position: Int) {
        let (index, columns) = try fullTextColumns(table: table)
        guard let position = columns.firstIndex(where: { $0.lowercased() == column.lowercased() }) else {
            throw StoreError(code: .invalidQuery, message: "column '\(column)' is not in the full-text index of \(table) (indexed: \(columns.joined(separator: ", ")))")
        }
        return (index, position)
    }

    /// Runs an auxiliary function on one row of a match.
    private func fullTextMarkup(_ function: String, index: String, arguments: [SQLiteValue], query: String, rowID: Int64) throws -> String? {
        let sql = "SELECT \(function) FROM \(quoteIdentifier(index)) WHERE \(quoteIdentifier(index)) MATCH ? AND rowid = ?"
        do {
            return try fetchRows(sql: sql, arguments: arguments + [.text(query), .integer(rowID)]).first.flatMap { String(sqliteValue: $0[0]) }
        } catch let error as StoreError where error.message.contains("fts5:") {
            throw StoreError(code: .invalidQuery, message: "invalid full-text query '\(query)': \(FilterCompiler.fullTextMessage(error.message))")
        }
    }
}
