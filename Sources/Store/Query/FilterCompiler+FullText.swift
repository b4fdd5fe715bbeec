/// `MATCH`: membership in the table's full-text index, checked by SQLite
/// before the query runs, so that a malformed full-text query is an
/// `invalidQuery` error with a caret, not an SQLite error from inside a read.
extension FilterCompiler {
    mutating func matchSQL(column: Operand?, query: Operand, position: Int?) throws -> String {
        guard case .value(.text(let text)) = query else {
            throw failure("MATCH needs a text query on its right, as in MATCH 'zoe*'", at: query)
        }
        guard let schema, let indexed = try schema.fullTextColumns(table.name) else {
            throw failure("table \(table.name) has no full-text index: declare one in a migration "
                          + "(.fullTextIndex(version:_:)) to use MATCH", position: position, code: .invalidQuery)
        }
        var restricted: String?
        if let column {
            guard case .column(let name, let columnPosition) = column else {
                throw failure("MATCH needs a column of the full-text index on its left, or nothing", at: column)
            }
            guard let found = indexed.first(where: { $0.lowercased() == name.lowercased() }) else {
                throw failure("column '\(name)' is not in the full-text index of \(table.name) (indexed: \(indexed.joined(separator: ", ")))",
                              position: columnPosition, code: .invalidQuery)
            }
            restricted = found
        }
        let index = FullTextNaming.indexTable(for: table.name)
        if let problem = schema.fullTextProblem(index, restricted, text) {
            // Under the token SQLite names, when the query is a literal of the query string.
            var caret = position
            if let position, let source, position > 0, position <= source.count,
               ["'", "\""].contains(source[source.index(source.startIndex, offsetBy: position - 1)]) {
                caret = position + Self.offset(of: problem, in: text)
            }
            throw failure("invalid full-text query: \(Self.fullTextMessage(problem))", position: caret, code: .invalidQuery)
        }
        arguments.append(.text(text))
        if context.oneRow, alias == nil {
            // One row (a live query's point query): a lookup of its rowid in
            // the index, where listing every match costs a thousand rows' worth.
            return "EXISTS (SELECT 1 FROM \(quoteIdentifier(index)) WHERE \(quoteIdentifier(restricted ?? index)) MATCH ? "
                + "AND rowid = \(columnSQL("rowid")))"
        }
        return "\(columnSQL("rowid")) IN (SELECT rowid FROM \(quoteIdentifier(index)) WHERE \(quoteIdentifier(restricted ?? index)) MATCH ?)"
    }

    /// SQLite's message without its `fts5: ` prefix and the SQL it quotes.
    static func fullTextMessage(_ message: String) -> String {
        var text = message
        if let sql = text.range(of: " (in ") ?? text.range(of: "\nSQL:") { text = String(text[..<sql.lowerBound]) }
        if text.hasPrefix("fts5: ") { text.removeFirst(6) }
        return text.replacingOccurrences(of: "near \"\"", with: "at the end of the query")
    }

    /// Where in the query text SQLite's `near "x"` points (`near ""`: its
    /// end), or 0.
    static func offset(of message: String, in text: String) -> Int {
        guard let near = message.range(of: "near \""), let end = message[near.upperBound...].firstIndex(of: "\"") else { return 0 }
        let token = message[near.upperBound..<end]
        if token.isEmpty { return text.count }
        guard let found = text.range(of: token) else { return 0 }
        return text.distance(from: text.startIndex, to: found.lowerBound)
    }
}
