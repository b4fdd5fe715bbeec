/// A statement's rows as `Records/` reads them.
extension Statement {
    /// A decoder of this statement's rows, made once and kept with the
    /// statement (it runs on one connection, one caller at a time), for the
    /// queries that read a row or a few per commit (a live query's changed
    /// rows, a snapshot's element).
    func decoder(tableName: String) -> StatementDecoder {
        if let cached = attachment as? StatementDecoder, cached.tableName == tableName { return cached }
        let decoder = StatementDecoder(statement: self, tableName: tableName)
        attachment = decoder
        return decoder
    }

    /// The whole current row.
    func row() -> Row {
        var values: [SQLiteValue] = []
        values.reserveCapacity(columnCount)
        for index in 0..<Int32(columnCount) {
            values.append(value(at: index))
        }
        return Row(columns: columnNames, values: values)
    }
}
