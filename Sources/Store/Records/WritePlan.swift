
struct WritePlanKey: Hashable {
    let type: ObjectIdentifier
    let kind: WritePlan.Kind
}

/// A model type's prepared INSERT, UPDATE or upsert, with the encoder that
/// binds a model's properties to it.
final class WritePlan {
    enum Kind { case insert, update, upsert }

    let statement: Statement
    let encoder: StatementEncoder

    init(kind: Kind, connection: Connection, table: TableInfo, keys: [String], columns: [String], primaryKey: String) throws {
        let quotedTable = quoteIdentifier(table.name)
        let quotedColumns = columns.map(quoteIdentifier)
        let placeholders = (1...max(columns.count, 1)).map { "?\($0)" }
        let sql: String
        switch kind {
        case .insert:
            sql = "INSERT INTO \(quotedTable) (\(quotedColumns.joined(separator: ", "))) VALUES (\(placeholders.prefix(columns.count).joined(separator: ", ")))"
        case .update:
            guard let keyIndex = columns.firstIndex(of: primaryKey) else {
                throw StoreError(code: .invalidUse, message: "cannot update table \(table.name): the model does not encode its primary key '\(primaryKey)'")
            }
            let assignments = zip(quotedColumns, placeholders).enumerated()
                .filter { $0.offset != keyIndex }
                .map { "\($0.element.0) = \($0.element.1)" }
            guard !assignments.isEmpty else {
                throw StoreError(code: .invalidUse, message: "cannot update table \(table.name): the model has no column besides its primary key")
            }
            sql = "UPDATE \(quotedTable) SET \(assignments.joined(separator: ", ")) WHERE \(quotedColumns[keyIndex]) = \(placeholders[keyIndex])"
        case .upsert:
            let updates = quotedColumns.filter { $0 != quoteIdentifier(primaryKey) }.map { "\($0) = excluded.\($0)" }
            let action = updates.isEmpty ? "DO NOTHING" : "DO UPDATE SET \(updates.joined(separator: ", "))"
            sql = "INSERT INTO \(quotedTable) (\(quotedColumns.joined(separator: ", "))) VALUES (\(placeholders.prefix(columns.count).joined(separator: ", "))) ON CONFLICT(\(quoteIdentifier(primaryKey))) \(action)"
        }
        statement = try connection.prepare(sql: sql)
        encoder = StatementEncoder(statement: statement.handle, parameterNames: keys, tableName: table.name)
    }

    /// Binds the model and runs the statement once.
    @inline(__always)
    func run<M: Model>(_ model: M) throws {
        defer { statement.reset() }
        do {
            try encoder.encode(model)
        } catch let error as StoreError {
            var error = error
            if error.sql == nil { error.sql = statement.sql }
            throw error
        }
        while try statement.step() {}
    }
}
