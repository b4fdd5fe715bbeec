/// One changed column of an observed object.
public struct PropertyChange: Sendable, Hashable {
    /// The column name.
    public let name: String
    /// Its value before the commit.
    public let oldValue: SQLiteValue
    /// Its value after the commit.
    public let newValue: SQLiteValue

    /// Its value before the commit, typed: `change.oldValue(as: Int.self)`
    /// (nil when it was NULL).
    ///
    /// - Throws: `.typeMismatch` naming the column when the value is not a `T`.
    ///
    /// - Parameter type: the type to read the value as.
    /// - Returns: the old value, or nil for NULL.
    public func oldValue<T: SQLiteValueConvertible>(as type: T.Type = T.self) throws -> T? {
        try Self.typed(oldValue, name)
    }

    /// Its value after the commit, typed (nil when it is NULL).
    ///
    /// - Throws: `.typeMismatch` naming the column when the value is not a `T`.
    ///
    /// - Parameter type: the type to read the value as.
    /// - Returns: the new value, or nil for NULL.
    public func newValue<T: SQLiteValueConvertible>(as type: T.Type = T.self) throws -> T? {
        try Self.typed(newValue, name)
    }

    /// Its value before the commit, as the type of a model's property:
    /// `change.oldValue(as: \Person.age)` is an `Int?`.
    ///
    /// - Throws: `.typeMismatch` when the value is not a `V` (NULL for a non-optional `V`).
    ///
    /// - Parameter keyPath: the model's property whose type the value takes.
    /// - Returns: the old value.
    public func oldValue<M: Model, V: SQLiteValueConvertible>(as keyPath: KeyPath<M, V>) throws -> V {
        try Self.exactly(oldValue, name)
    }

    /// Its value after the commit, as the type of a model's property.
    ///
    /// - Throws: `.typeMismatch` when the value is not a `V` (NULL for a non-optional `V`).
    ///
    /// - Parameter keyPath: the model's property whose type the value takes.
    /// - Returns: the new value.
    public func newValue<M: Model, V: SQLiteValueConvertible>(as keyPath: KeyPath<M, V>) throws -> V {
        try Self.exactly(newValue, name)
    }

    static func exactly<V: SQLiteValueConvertible>(_ value: SQLiteValue, _ column: String) throws -> V {
        guard let typed = V(sqliteValue: value) else {
            throw StoreError(code: .typeMismatch, message: "column '\(column)' holds \(value.typeName) \(value), not \(V.self)")
        }
        return typed
    }

    static func typed<T: SQLiteValueConvertible>(_ value: SQLiteValue, _ column: String) throws -> T? {
        guard !value.isNull else { return nil }
        guard let typed = T(sqliteValue: value) else {
            throw StoreError(code: .typeMismatch, message: "column '\(column)' holds \(value.typeName) \(value), not \(T.self)")
        }
        return typed
    }
}

extension Array where Element == PropertyChange {
    /// The old and new value of a model's property, typed as the property,
    /// or nil when its column did not change:
    /// `if let age = try properties.values(of: \Person.age) { age.old, age.new }`.
    ///
    /// - Throws: `.unknownColumn` when the key path is not a column (see
    ///   `Model.columnName(for:)`), `.typeMismatch` when a value is not a `V`.
    ///
    /// - Parameter keyPath: the model's property.
    /// - Returns: its old and new values, or nil when its column did not change.
    /// - Complexity: O(c) for c changed columns.
    public func values<M: Model, V: SQLiteValueConvertible>(of keyPath: KeyPath<M, V>) throws -> (old: V, new: V)? {
        let column = try M.column(for: keyPath).get()
        guard let change = first(where: { $0.name == column }) ?? first(where: { $0.name.lowercased() == column.lowercased() }) else {
            return nil
        }
        return (try change.oldValue(as: keyPath), try change.newValue(as: keyPath))
    }
}
