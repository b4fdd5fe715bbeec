import Foundation

extension Database {
    // Writing models: insert, update, upsert, delete.

    /// Inserts a model and returns it with the id SQLite assigned (through
    /// `didInsert(rowID:)`) when its id was nil.
    ///
    /// - Throws: `StoreError` (`.constraint` for a duplicate id or a NOT NULL
    ///   or foreign-key violation, `.unknownColumn` when the model has a key
    ///   that is not a column).
    ///
    /// - Parameter model: the model; its id nil for SQLite to assign one.
    /// - Returns: the model as inserted, with its id.
    @discardableResult
    public func insert<M: Model>(_ model: M) throws -> M {
        let plan = try writePlan(for: model, kind: .insert)
        try plan.run(model)
        var inserted = model
        inserted.didInsert(rowID: connection.lastInsertRowID)
        return inserted
    }

    /// Updates the row with the model's id.
    ///
    /// - Throws: `StoreError.Code.notFound` when no row has that id.
    ///
    /// - Parameter model: the model, whose id names the row; every column is written.
    public func update<M: Model>(_ model: M) throws {
        let id = model.id.sqliteValue
        guard !id.isNull else {
            throw StoreError(code: .invalidUse, message: "cannot update a \(M.self) whose id is nil; insert it first")
        }
        let plan = try writePlan(for: model, kind: .update)
        try plan.run(model)
        guard connection.changes > 0 else {
            throw StoreError(code: .notFound, message: "no row in table \(M.tableName) has \(M.primaryKeyColumn) \(id)")
        }
    }

    /// Reads the model with this id, lets `change` modify it, and writes back
    /// only the columns whose values changed (nothing when none did), like
    /// GRDB's `updateChanges`. Returns the model as stored.
    ///
    /// ```swift
    /// try await store.write { tx in
    ///     try tx.update(Person.self, id: 7) { $0.email = "ana@example.com" }
    /// }
    /// ```
    ///
    /// - Throws: `.notFound` when no row has that id; `.invalidUse` when
    ///   `change` alters the id; `.constraint` from SQLite.
    ///
    /// - Parameters:
    ///   - type: the model type.
    ///   - id: the row's primary key.
    ///   - change: modifies the model read; must not change its id.
    /// - Returns: the model as stored after the change.
    /// - Complexity: one read and one UPDATE by primary key, each O(log n).
    @discardableResult
    public func update<M: Model>(_ type: M.Type, id: M.ID, _ change: (inout M) throws -> Void) throws -> M {
        guard var model = try fetchOne(M.self, id: id) else {
            throw StoreError(code: .notFound, message: "no row in table \(M.tableName) has \(M.primaryKeyColumn) \(id.sqliteValue)")
        }
        let before = try ColumnRecorder.columns(of: model)
        try change(&model)
        guard model.id.sqliteValue == id.sqliteValue else {
            throw StoreError(code: .invalidUse, message: "update(\(M.self).self, id: \(id.sqliteValue)) cannot change the id; delete and insert instead")
        }
        let after = try ColumnRecorder.columns(of: model)
        let info = try tableInfo(M.tableName)
        var assignments: [String] = []
        var arguments: [SQLiteValue] = []
        for (index, key) in after.keys.enumerated() {
            let old = before.keys.firstIndex(of: key).map { before.values[$0] }
            guard old != after.values[index] else { continue }
            let column = try columnName(for: key, of: M.self, in: info)
            assignments.append("\(quoteIdentifier(column)) = ?")
            arguments.append(after.values[index])
        }
        guard !assignments.isEmpty else { return model }
        let key = try primaryKeyColumn(of: M.self, in: info)
        try execute(sql: "UPDATE \(quoteIdentifier(info.name)) SET \(assignments.joined(separator: ", ")) WHERE \(quoteIdentifier(key)) = ?",
                    arguments: arguments + [id.sqliteValue])
        return model
    }

    /// Inserts the model, or updates the row that has its id.
    ///
    /// - Parameter model: the model; its id names the row to update, if there is one.
    /// - Returns: the model as stored (with its id when SQLite assigned one).
    /// - Throws: `StoreError` (`.constraint` for a NOT NULL, UNIQUE or foreign-key
    ///   violation, `.unknownColumn` when the model has a key that is not a column).
    @discardableResult
    public func upsert<M: Model>(_ model: M) throws -> M {
        let plan = try writePlan(for: model, kind: .upsert)
        try plan.run(model)
        var saved = model
        if model.id.sqliteValue.isNull {
            saved.didInsert(rowID: connection.lastInsertRowID)
        }
        return saved
    }

    /// Deletes the model's row; returns whether a row was deleted.
    ///
    /// - Parameter model: the model whose id names the row.
    /// - Returns: whether a row was deleted.
    /// - Throws: `StoreError` (`.constraint` when a foreign key restricts the delete).
    @discardableResult
    public func delete<M: Model>(_ model: M) throws -> Bool {
        try delete(M.self, id: model.id)
    }

    /// Deletes the row with this id; returns whether a row was deleted.
    ///
    /// - Parameters:
    ///   - type: the model type.
    ///   - id: the row's primary key.
    /// - Returns: whether a row was deleted.
    /// - Throws: `StoreError` (`.constraint` when a foreign key restricts the delete).
    @discardableResult
    public func delete<M: Model>(_ type: M.Type, id: M.ID) throws -> Bool {
        let info = try tableInfo(M.tableName)
        let key = try primaryKeyColumn(of: M.self, in: info)
        try execute(sql: "DELETE FROM \(quoteIdentifier(info.name)) WHERE \(quoteIdentifier(key)) = ?", arguments: [id.sqliteValue])
        return connection.changes > 0
    }

    /// Deletes the rows that match a filter (all rows without one); returns how many.
    ///
    /// - Parameters:
    ///   - type: the model type.
    ///   - filter: which rows; every row when nil.
    /// - Returns: how many rows were deleted.
    /// - Throws: `StoreError` naming an unknown column, or `.constraint` when a
    ///   foreign key restricts the delete (then none is deleted).
    @discardableResult
    public func deleteAll<M: Model>(_ type: M.Type, filter: Filter? = nil) throws -> Int {
        let info = try tableInfo(M.tableName)
        let (condition, arguments) = try SelectBuilder.whereClause(filter, table: info, schema: schemaLookup)
        let sql = "DELETE FROM \(quoteIdentifier(info.name))" + condition
        try execute(sql: sql, arguments: arguments)
        return connection.changes
    }

    private func writePlan<M: Model>(for model: M, kind: WritePlan.Kind) throws -> WritePlan {
        if writePlansGeneration != schema.generation {
            writePlans.removeAll()
            writePlansGeneration = schema.generation
        }
        let key = WritePlanKey(type: ObjectIdentifier(M.self), kind: kind)
        if let plan = writePlans[key] { return plan }
        let info = try tableInfo(M.tableName)
        let keys = try ColumnRecorder.keys(of: model)
        let columns = try keys.map { try columnName(for: $0, of: M.self, in: info) }
        let primaryKey = try primaryKeyColumn(of: M.self, in: info)
        let plan = try WritePlan(kind: kind, connection: connection, table: info, keys: keys, columns: columns, primaryKey: primaryKey)
        writePlans[key] = plan
        return plan
    }

    /// The column a model's coding key writes.
    private func columnName<M: Model>(for key: String, of type: M.Type, in info: TableInfo) throws -> String {
        guard let column = info.column(named: key) else {
            throw StoreError(code: .unknownColumn, message: "\(M.self) has a property '\(key)', which is not a column of table \(info.name) (columns: \(info.columnNames.joined(separator: ", ")))")
        }
        return column.name
    }
}
