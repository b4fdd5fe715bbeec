import SluiceNaming

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
        /// Whether the column is generated (`GENERATED ALWAYS AS ...`): read, never written.
        public let isGenerated: Bool

        /// A column description (as `PRAGMA table_xinfo` gives it).
        ///
        /// - Parameters:
        ///   - name: the column's name.
        ///   - declaredType: its declared type (`INTEGER`, `TEXT`, ...; empty for none).
        ///   - isNotNull: whether it is NOT NULL.
        ///   - hasDefault: whether it has a default value.
        ///   - isPrimaryKey: whether it is part of the primary key.
        ///   - isGenerated: whether it is a generated column.
        public init(name: String, declaredType: String, isNotNull: Bool, hasDefault: Bool, isPrimaryKey: Bool, isGenerated: Bool = false) {
            self.name = name
            self.declaredType = declaredType
            self.isNotNull = isNotNull
            self.hasDefault = hasDefault
            self.isPrimaryKey = isPrimaryKey
            self.isGenerated = isGenerated
        }

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

    /// What kind of table it is.
    public enum Kind: String, Sendable {
        /// An ordinary table with a rowid.
        case table
        /// A `WITHOUT ROWID` table.
        case withoutRowID = "WITHOUT ROWID table"
        /// A view.
        case view
        /// A virtual table (FTS, R*Tree, ...).
        case virtual = "virtual table"
    }

    /// The table's name as stored in the schema.
    public let name: String
    /// What kind of table it is.
    public let kind: Kind
    /// Its columns, in declaration order, generated ones included (as `SELECT *` returns them).
    public let columns: [Column]

    /// The primary-key column names, in key order; `rowid` for a table without one.
    public let primaryKey: [String]
    /// Whether an index can make an INSERT or UPDATE replace another row
    /// (a UNIQUE constraint, or a primary key that is not the rowid).
    /// The unique indexes (UNIQUE constraints, a non-rowid PRIMARY KEY,
    /// `CREATE UNIQUE INDEX`): through any of them, INSERT or UPDATE with
    /// `OR REPLACE` can delete other rows.
    let uniqueIndexes: [UniqueIndex]
    var hasUniqueIndex: Bool { !uniqueIndexes.isEmpty }

    /// A unique index's key: its columns in order, each with the collation it compares with.
    struct UniqueIndex: Sendable, Hashable {
        struct Part: Sendable, Hashable {
            /// The column, or nil for an expression.
            var column: String?
            /// The expression as the index's SQL writes it (with any
            /// `COLLATE`), for a part that is not a column; nil when unread.
            var expression: String? = nil
            var collation: String
        }

        var name: String
        var parts: [Part]
    }
    /// Column collations other than BINARY, by column name.
    let collations: [String: String]
    /// Its single-column foreign keys: what relationship paths in queries follow, and
    /// what a sync client maps between devices.
    public let foreignKeys: [ForeignKey]

    /// A single-column foreign key: `column` holds the `parentColumn` value of a row of `parentTable`.
    public struct ForeignKey: Sendable, Hashable {
        /// The child column.
        public let column: String
        /// The table it points at.
        public let parentTable: String
        /// The parent column; nil when the key references the parent's primary key implicitly.
        public let parentColumn: String?
    }

    /// A description of an ordinary table (for tools that check input against a schema).
    ///
    /// - Parameters:
    ///   - name: the table's name.
    ///   - columns: its columns, in order.
    ///   - primaryKey: the primary key's column names (empty: the rowid).
    public init(name: String, columns: [Column], primaryKey: [String]) {
        self.init(name: name, kind: .table, columns: columns, primaryKey: primaryKey, uniqueIndexes: [], collations: [:])
    }

    init(name: String, kind: Kind, columns: [Column], primaryKey: [String], uniqueIndexes: [UniqueIndex], collations: [String: String],
         foreignKeys: [ForeignKey] = []) {
        self.foreignKeys = foreignKeys
        self.name = name
        self.kind = kind
        self.columns = columns
        self.primaryKey = primaryKey
        self.uniqueIndexes = uniqueIndexes
        self.collations = collations
    }

    /// The collation of a column (`BINARY` unless declared otherwise).
    func collation(of column: String) -> String {
        collations[column] ?? "BINARY"
    }

    /// Whether the rows' identity is the rowid: an INTEGER PRIMARY KEY (its
    /// alias) or no declared key. Otherwise identity is the declared key.
    var identityIsRowID: Bool { primaryKey == ["rowid"] || hasIntegerPrimaryKey }

    /// Throws unless changes to the table can be followed: live queries
    /// and object observations need a table with a rowid.
    func checkObservable() throws {
        guard kind == .table else {
            throw StoreError(code: .unsupportedTable, message: "cannot observe \(name): it is a \(kind.rawValue); live queries and observations need an ordinary table with a rowid (SQLite reports no row changes of \(kind == .view ? "views" : kind == .virtual ? "virtual tables" : "WITHOUT ROWID tables") to its hooks)")
        }
    }

    /// The column with this name (ASCII case-insensitive, as SQLite), or
    /// whose name is this Swift name in snake_case (`projectID` →
    /// `project_id`), if any.
    ///
    /// - Parameter name: a column name, or a Swift property name.
    /// - Returns: the column, or nil.
    public func column(named name: String) -> Column? {
        if let exact = columns.first(where: { $0.name == name }) { return exact }
        let lowered = name.lowercased()
        if let match = columns.first(where: { $0.name.lowercased() == lowered }) { return match }
        // A Swift property name: `projectID` finds `project_id`.
        let snake = ColumnNaming.snakeCase(name)
        guard snake != name else { return nil }
        return columns.first { $0.name.lowercased() == snake }
    }

    /// The column names, in order.
    public var columnNames: [String] { columns.map(\.name) }

    /// Whether the primary key is a single INTEGER PRIMARY KEY, an alias of rowid.
    public var hasIntegerPrimaryKey: Bool {
        primaryKey.count == 1 && column(named: primaryKey[0])?.declaredType.uppercased() == "INTEGER"
    }
}

/// Quotes an identifier for SQL: `person` → `"person"`, `a"b` → `"a""b"`.
///
/// For SQL built from names (tables, columns) that are not literals in your code.
///
/// - Parameter name: the identifier.
/// - Returns: the quoted identifier.
public func quoteIdentifier(_ name: String) -> String {
    // The usual name has no quote: skip Foundation's replacingOccurrences (slow on Linux,
    // and hot when SQL is built per row).
    guard name.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + name + "\"" }
    return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}
