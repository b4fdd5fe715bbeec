import Foundation

extension Database {
    /// Inserts a dynamic row, checking each value against its column's type
    /// affinity first, and returns the new rowid.
    ///
    /// - Throws: `.unknownColumn` naming the column and listing the valid
    ///   ones; `.typeMismatch` naming the column and the expected type;
    ///   `.constraint` from SQLite.
    ///
    /// - Parameters:
    ///   - row: the values, by column name.
    ///   - table: the table's name.
    /// - Returns: the new row's rowid.
    @discardableResult
    public func insert(_ row: Row, into table: String) throws -> Int64 {
        let info = try tableInfo(table)
        var names: [String] = []
        for (name, value) in zip(row.columns, row.values) {
            guard let column = info.column(named: name) else {
                throw StoreError(code: .unknownColumn, message: "unknown column '\(name)' in table \(info.name) (columns: \(info.columnNames.joined(separator: ", ")))")
            }
            try Self.check(value, fits: column)
            names.append(quoteIdentifier(column.name))
        }
        let sql: String
        if names.isEmpty {
            sql = "INSERT INTO \(quoteIdentifier(info.name)) DEFAULT VALUES"
        } else {
            let placeholders = Array(repeating: "?", count: names.count).joined(separator: ", ")
            sql = "INSERT INTO \(quoteIdentifier(info.name)) (\(names.joined(separator: ", "))) VALUES (\(placeholders))"
        }
        try execute(sql: sql, arguments: row.values)
        return connection.lastInsertRowID
    }

    /// Checks that a value suits a column's declared type, more strictly
    /// than SQLite (which would store `"abc"` in an INTEGER column).
    static func check(_ value: SQLiteValue, fits column: TableInfo.Column) throws {
        let fits: Bool
        switch (column.affinity, value) {
        case (_, .null), (.blob, _): fits = true
        case (.integer, .integer): fits = true
        case (.integer, .real(let double)): fits = Int64(exactly: double) != nil
        case (.real, .integer), (.real, .real), (.numeric, .integer), (.numeric, .real): fits = true
        case (.text, .text): fits = true
        default: fits = false
        }
        guard fits else {
            let expected: String
            switch column.affinity {
            case .integer: expected = "an integer"
            case .real, .numeric: expected = "a number"
            case .text: expected = "text"
            case .blob: expected = "any value"
            }
            throw StoreError(code: .typeMismatch, message: "column '\(column.name)' expects \(expected), got \(value.typeName) \(Self.preview(value))")
        }
    }

    static func preview(_ value: SQLiteValue) -> String {
        switch value {
        case .text(let text):
            let short = text.count > 40 ? String(text.prefix(40)) + "…" : text
            return "\"\(short)\""
        case .blob(let data): return "(\(data.count) bytes)"
        default: return value.description
        }
    }
}
