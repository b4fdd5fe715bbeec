/// The type a column is declared with (SQLite's type affinity names), as a
/// migration made from a model declares each property's column.
///
/// Related SQLite documentation: <https://www.sqlite.org/datatype3.html#type_affinity>
public enum ColumnType: String, Sendable, Hashable {
    /// Integers (and `Bool`, 0 or 1).
    case integer = "INTEGER"
    /// Floating-point numbers.
    case real = "REAL"
    /// Text (`String`, and `Date`, `UUID`, JSON as text).
    case text = "TEXT"
    /// Bytes (`Data`).
    case blob = "BLOB"
    /// No declared type: values are stored as they are given.
    case any = ""

    /// Whether a column declared as `declared` (SQLite's rules for a declared
    /// type's affinity) stores this type's values as they are meant to be.
    ///
    /// - Parameter declared: the column's declared type, as `PRAGMA table_info` gives it.
    /// - Returns: false when the column would convert them (a text property
    ///   in an INTEGER column, a number in a TEXT one).
    func fits(declared: String) -> Bool {
        let type = declared.uppercased()
        switch self {
        case .any: return true
        case .integer, .real:
            // INTEGER, INT, NUMERIC, REAL, FLOAT, DOUBLE, or none (BLOB affinity keeps values).
            return !(type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT"))
        case .text:
            return !(type.contains("INT") || type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB")
                     || type.contains("NUM") || type.contains("DEC") || type.contains("BOOL"))
        case .blob:
            return !(type.contains("INT") || type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT")
                     || type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB"))
        }
    }
}
