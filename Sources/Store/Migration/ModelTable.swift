/// What a migration made from a model does (`Migration.table(for:version:)`):
/// creates the model's table when the database has none, and otherwise adds
/// the columns the model declares that the table lacks — so that the same
/// migration list brings a new database and an old one to the model, as
/// SwiftData's lightweight migration does, in numbered steps.
struct ModelTable: Sendable, Hashable {
    /// The model's type name, for messages.
    let model: String
    /// Its table.
    let table: String
    /// Its columns, in order.
    let columns: [ColumnDeclaration]

    /// `CREATE TABLE` with every column: what a new database gets.
    var createSQL: String {
        "CREATE TABLE \(quoteIdentifier(table)) (\n    " + columns.map(\.definition).joined(separator: ",\n    ") + "\n)"
    }

    /// The table and its indexes, as a script.
    var script: String {
        ([createSQL] + indexSQL).joined(separator: ";\n")
    }

    /// Creates the table, or adds the columns it lacks.
    ///
    /// - Throws: `.migration` naming the model, property and column when the
    ///   model declares no columns (no `@Table`), or a column cannot be added
    ///   to the rows already there (NOT NULL without a default, a primary key).
    func apply(on db: Database) throws {
        guard !columns.isEmpty else {
            throw StoreError(code: .migration, message: "model \(model) declares no columns: give it @Table (SluiceMacros), or write its table's SQL in a Migration")
        }
        guard try db.tableExists(table) else {
            try db.execute(script: script)
            return
        }
        let existing = Set(try db.tableInfo(table).columns.map { $0.name.lowercased() })
        for column in columns where !existing.contains(column.column.lowercased()) {
            if column.isPrimaryKey {
                throw StoreError(code: .migration, message: "table \(table) has no column \(column.column) for the primary key (property \(column.property) of model \(model)): a primary key cannot be added to a table; write this migration's SQL")
            }
            if !column.isNullable, column.defaultValue == nil {
                throw StoreError(code: .migration, message: "cannot add column \(column.column) (property \(column.property) of model \(model)) to table \(table): it is NOT NULL with no default value for the rows already there; give the property a literal default value or make it optional")
            }
            try db.execute(sql: "ALTER TABLE \(quoteIdentifier(table)) ADD COLUMN \(column.definition)")
        }
        try createIndexes(on: db)
    }

    /// `CREATE INDEX` for each `@Indexed` column (named `table_column`), unless there is one by that name.
    var indexSQL: [String] {
        columns.filter(\.isIndexed).map { column in
            "CREATE INDEX IF NOT EXISTS \(quoteIdentifier(table + "_" + column.column)) ON \(quoteIdentifier(table)) (\(quoteIdentifier(column.column)))"
        }
    }

    private func createIndexes(on db: Database) throws {
        for sql in indexSQL { try db.execute(sql: sql) }
    }
}
