import Foundation

/// One column of a model, as its stored property declares it: the column's
/// name and type, whether it may hold NULL, its default value, and whether
/// it is the primary key. The `@Table` macro writes a model's
/// (`Model.columnDeclarations`); each Swift type maps as the row writer
/// stores it: integers and `Bool` to INTEGER, `Double` to REAL, `String`,
/// `Date` and `UUID` to TEXT, `Data` to BLOB, an enum to its raw value's
/// type, any other `Codable` value to TEXT (JSON); an optional may be NULL.
public struct ColumnDeclaration: Sendable, Hashable {
    /// The Swift property's name.
    public let property: String
    /// The column's name.
    public let column: String
    /// The declared type.
    public let type: ColumnType
    /// Whether the column may hold NULL (the property is optional).
    public let isNullable: Bool
    /// The column's default value, when the property has a literal one.
    public let defaultValue: SQLiteValue?
    /// Whether this is the primary key (the `id` property).
    public let isPrimaryKey: Bool
    /// Whether the column gets an index of its own (`@Indexed`).
    public var isIndexed = false
    /// The table and column it refers to (`@References(Person.self)`), and what a delete there does.
    public var reference: Reference?

    /// A foreign key: the referred table's primary key, and the action on delete.
    public struct Reference: Sendable, Hashable {
        /// The referred table.
        public let table: String
        /// Its primary-key column.
        public let column: String
        /// What deleting the referred row does to this one.
        public let onDelete: ForeignKeyAction
    }

    /// The same column, with an index of its own.
    public func indexed() -> ColumnDeclaration {
        var copy = self
        copy.isIndexed = true
        return copy
    }

    /// The same column, referring to a model's primary key.
    ///
    /// - Parameters:
    ///   - model: the model referred to.
    ///   - onDelete: what deleting the referred row does to this one.
    /// - Returns: the column with its foreign key.
    public func references<M: Model>(_ model: M.Type, onDelete: ForeignKeyAction = .noAction) -> ColumnDeclaration {
        var copy = self
        copy.reference = Reference(table: M.tableName, column: M.primaryKeyColumn, onDelete: onDelete)
        return copy
    }

    /// A column of a type the row writer binds directly (numbers, text, dates, enums...).
    ///
    /// - Parameters:
    ///   - property: the property's name.
    ///   - column: the column's name.
    ///   - type: the property's type.
    ///   - defaultValue: the property's initial value, if it has one.
    ///   - primaryKey: whether it is the primary key.
    public static func column<T: SQLiteValueConvertible>(
        _ property: String, _ column: String, _ type: T.Type, default defaultValue: T? = nil, primaryKey: Bool = false
    ) -> ColumnDeclaration {
        bound(property, column, type, defaultValue, primaryKey)
    }

    /// A column of a type that is both bound directly and `Codable` (the row writer binds it).
    public static func column<T: SQLiteValueConvertible & Encodable>(
        _ property: String, _ column: String, _ type: T.Type, default defaultValue: T? = nil, primaryKey: Bool = false
    ) -> ColumnDeclaration {
        bound(property, column, type, defaultValue, primaryKey)
    }

    private static func bound<T: SQLiteValueConvertible>(
        _ property: String, _ column: String, _ type: T.Type, _ defaultValue: T?, _ primaryKey: Bool
    ) -> ColumnDeclaration {
        ColumnDeclaration(property: property, column: column, type: T.columnType, isNullable: T.isNullableColumn,
                          defaultValue: defaultValue.map(\.sqliteValue), isPrimaryKey: primaryKey)
    }

    /// A column of another `Codable` type: JSON text.
    public static func column<T: Encodable>(
        _ property: String, _ column: String, _ type: T.Type, default defaultValue: T? = nil, primaryKey: Bool = false
    ) -> ColumnDeclaration {
        var encoded: SQLiteValue?
        if let defaultValue { encoded = json(defaultValue) }
        return ColumnDeclaration(property: property, column: column, type: .text, isNullable: false,
                                 defaultValue: encoded, isPrimaryKey: primaryKey)
    }

    /// An optional column of another `Codable` type: JSON text, or NULL.
    public static func column<T: Encodable>(
        _ property: String, _ column: String, _ type: T?.Type, default defaultValue: T?? = nil, primaryKey: Bool = false
    ) -> ColumnDeclaration {
        var encoded: SQLiteValue?
        if let defaultValue, let value = defaultValue { encoded = json(value) }
        return ColumnDeclaration(property: property, column: column, type: .text, isNullable: true,
                                 defaultValue: encoded, isPrimaryKey: primaryKey)
    }

    private static func json<T: Encodable>(_ value: T) -> SQLiteValue? {
        guard let data = try? JSONEncoder().encode(value), let text = String(data: data, encoding: .utf8) else { return nil }
        return .text(text)
    }

    /// The column's definition in a `CREATE TABLE` or `ALTER TABLE ... ADD COLUMN`:
    /// `"sent_at" TEXT NOT NULL`, `"id" INTEGER PRIMARY KEY`.
    var definition: String {
        var parts = [quoteIdentifier(column)]
        if type != .any { parts.append(type.rawValue) }
        if isPrimaryKey {
            parts.append("PRIMARY KEY")
            // An INTEGER PRIMARY KEY is the rowid: never NULL. Another key is refused NULL.
            if type != .integer { parts.append("NOT NULL") }
        } else if !isNullable {
            parts.append("NOT NULL")
        }
        if let defaultValue, !defaultValue.isNull { parts.append("DEFAULT " + defaultValue.sqlLiteral) }
        if let reference {
            parts.append("REFERENCES \(quoteIdentifier(reference.table)) (\(quoteIdentifier(reference.column)))")
            if reference.onDelete != .noAction { parts.append("ON DELETE " + reference.onDelete.rawValue) }
        }
        return parts.joined(separator: " ")
    }
}

/// What deleting a referred row does to the rows that refer to it (SQL's `ON DELETE`).
public enum ForeignKeyAction: String, Sendable, Hashable {
    /// Nothing: the delete fails while rows refer to it (with `foreign_keys` on, as a store opens it).
    case noAction = "NO ACTION"
    /// The delete fails at once while rows refer to it.
    case restrict = "RESTRICT"
    /// The referring rows are deleted too.
    case cascade = "CASCADE"
    /// The referring column becomes NULL.
    case setNull = "SET NULL"
    /// The referring column takes its default value.
    case setDefault = "SET DEFAULT"
}
