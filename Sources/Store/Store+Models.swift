extension Store {
    /// Opens the database, applies pending migrations, and checks that the
    /// tables hold what the models say (`check(_:)`), so that a model and
    /// its table that disagree are reported when the store opens, naming
    /// model, property and column, not at the first fetch deep in an app.
    ///
    /// ```swift
    /// let store = try Store(path: "chat.sqlite", migrations: migrations, models: [ChatMessage.self])
    /// ```
    ///
    /// - Parameters:
    ///   - path: the database file (created when missing), or `":memory:"`.
    ///   - migrations: every migration of the app.
    ///   - models: the models the app reads and writes.
    ///   - configuration: how to open it.
    /// - Throws: as `init(path:migrations:configuration:)`, and as `check(_:)`.
    public convenience init(path: String, migrations: [Migration], models: [any Model.Type],
                            configuration: Configuration = Configuration()) throws {
        try self.init(path: path, migrations: migrations, configuration: configuration)
        try check(models)
    }

    /// Checks each model against its table: the table exists and, for a
    /// model that declares its columns (`@Table`), each property's column
    /// exists with a type that keeps its values as they are.
    ///
    /// - Parameter models: the models to check.
    /// - Throws: `StoreError` naming the model, and the property and column
    ///   at fault: `.unknownTable` when the table is missing, `.unknownColumn`
    ///   when a column is, `.typeMismatch` when a column's declared type
    ///   would convert the property's values (text in an INTEGER column).
    public func check(_ models: [any Model.Type]) throws {
        try read { db in
            for model in models { try Self.check(model, in: db) }
        }
    }

    private static func check(_ model: any Model.Type, in db: Database) throws {
        let name = String(describing: model)
        guard try db.tableExists(model.tableName) else {
            throw StoreError(code: .unknownTable, message: "model \(name): the database has no table \(model.tableName) (tables: \(try db.tableNames().joined(separator: ", ")))")
        }
        let table = try db.tableInfo(model.tableName)
        let columns = Dictionary(table.columns.map { ($0.name.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
        for declared in model.columnDeclarations {
            guard let column = columns[declared.column.lowercased()] else {
                throw StoreError(code: .unknownColumn, message: "model \(name), property \(declared.property): table \(table.name) has no column \(declared.column) (columns: \(table.columnNames.joined(separator: ", ")))")
            }
            guard declared.type.fits(declared: column.declaredType) else {
                throw StoreError(code: .typeMismatch, message: "model \(name), property \(declared.property) (\(declared.type.rawValue)): column \(column.name) of table \(table.name) is declared \(column.declaredType), which would convert its values")
            }
        }
    }
}
