/// What Sluice knows of a table's columns, read from `PRAGMA table_info`.
///
/// Identifiers in generated SQL come only from here, never from user input.
public struct TableInfo: Sendable, Hashable {
    /// One column of a table.
    public struct Column: Sendable, Hashable {
        /// The column's name as declared.
        public let name: String
        /// The declared type (`INTEGER`, `TEXT`, ...), or empty.
        public let declaredType: String
        /// Whether the column is declared NOT NULL.
        public let isNotNull: Bool
        /// Whether the column has a default value.
        public let hasDefault: Bool
        /// Whether the column is part of the primary key.
        public let isPrimaryKey: Bool

        /// The column's type affinity, by SQLite's rules.
        ///
        /// Related SQLite documentation: <https://www.sqlite.org/datatype3.html#determination_of_column_affinity>
        public var affinity: Affinity { Affinity(declaredType: declaredType) }
    }

    /// SQLite's type affinities.
    public enum Affinity: String, Sendable {
        case integer, text, blob, real, numeric

        init(declaredType: String) {
            let type = declaredType.uppercased()
            if type.contains("INT") { self = .integer }
            else if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") { self = .text }
            else if type.isEmpty || type.contains("BLOB") { self = .blob }
            else if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") { self = .real }
            else { self = .numeric }
        }
    }

    /// The table's name as stored in the schema.
    public let name: String
    /// Its columns, in declaration order.
    public let columns: [Column]

    /// The primary-key column names, in key order; `rowid` for a table without one.
    public let primaryKey: [String]

    /// The column with this name (ASCII case-insensitive, as SQLite), if any.
    public func column(named name: String) -> Column? {
        if let exact = columns.first(where: { $0.name == name }) { return exact }
        let lowered = name.lowercased()
        return columns.first { $0.name.lowercased() == lowered }
    }

    /// The column names, in order.
    public var columnNames: [String] { columns.map(\.name) }

    /// Whether the primary key is a single INTEGER PRIMARY KEY, an alias of rowid.
    public var hasIntegerPrimaryKey: Bool {
        primaryKey.count == 1 && column(named: primaryKey[0])?.declaredType.uppercased() == "INTEGER"
    }
}

/// Quotes an identifier for SQL: `person` → `"person"`.
func quoteIdentifier(_ name: String) -> String {
    "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}
