/// A typed model stored in one table: a `Codable` value type whose coding
/// keys are the table's column names.
///
/// ```swift
/// struct Person: Model {
///     static let tableName = "person"
///     var id: Int64?
///     var firstName: String
///     var lastName: String
///     var age: Int?
///     enum CodingKeys: String, CodingKey {
///         case id, firstName = "first_name", lastName = "last_name", age
///     }
///     mutating func didInsert(rowID: Int64) { id = rowID }
/// }
/// ```
///
/// Properties of `SQLiteValueConvertible` types (integers, `Double`, `Bool`,
/// `String`, `Data`, `Date`, optionals of these) map to one column each;
/// `RawRepresentable` enums store their raw value; any other `Codable`
/// property is stored as JSON text.
public protocol Model: Codable, Sendable, Identifiable where ID: SQLiteValueConvertible {
    /// The table the model lives in.
    static var tableName: String { get }

    /// The primary-key column; `"id"` unless a model says otherwise.
    static var primaryKeyColumn: String { get }

    /// Called after an insert with the row's rowid, so a model whose id was
    /// nil can take the id SQLite assigned.
    mutating func didInsert(rowID: Int64)

    /// Reads a model from a fetched row.
    ///
    /// The default implementation uses `Codable` (`init(from:)`). A model on
    /// a hot path can read its columns itself, which skips `Codable`'s
    /// dynamic dispatch per property (see the README's benchmarks):
    ///
    /// ```swift
    /// init(row: RowReader) throws {
    ///     id = try row["id"]
    ///     firstName = try row["first_name"]
    /// }
    /// ```
    ///
    /// Keep it in step with the coding keys: the two must read the same columns.
    init(row: RowReader) throws

    /// Writes the model's columns for an insert or update.
    ///
    /// The default implementation uses `Codable` (`encode(to:)`); the
    /// `@Table` macro writes one column by column (see `RowWriter`).
    func write(to row: inout RowWriter) throws

    /// The column a key path of the model reads, for the typed API
    /// (`sorted(by: \.lastName)`, `filter(\.age >= 18)`, `observe(keyPaths: [\.age])`).
    ///
    /// The default knows no key path (typed calls report which one); the
    /// `@Table` macro derives it from the stored properties.
    static func columnName(for keyPath: PartialKeyPath<Self>) -> String?

    /// The model's columns, property by property: what a migration made from
    /// the model creates (`Migration.table(for:version:)`) and what a store
    /// checks its table against when it opens (`Store(path:migrations:models:)`).
    ///
    /// The default declares none; the `@Table` macro declares every stored
    /// property's column, with its type, whether it may be NULL, and its
    /// default value.
    static var columnDeclarations: [ColumnDeclaration] { get }
}

extension Model {
    /// `"id"`.
    public static var primaryKeyColumn: String { "id" }

    /// Does nothing: models with non-optional ids need no update.
    ///
    /// - Parameter rowID: the rowid SQLite assigned.
    public mutating func didInsert(rowID: Int64) {}

    /// Decodes the row with `Codable`.
    ///
    /// - Parameter row: the row to decode.
    /// - Throws: `StoreError.Code.decoding`, naming the column and the value that does not fit.
    @inlinable
    public init(row: RowReader) throws {
        self = try row.decode(Self.self)
    }

    /// Encodes the model with `Codable`.
    ///
    /// - Parameter row: the row to write the columns to.
    /// - Throws: `StoreError.Code.unknownColumn` for a key that is not a column, or an encoding error.
    public func write(to row: inout RowWriter) throws {
        try row.encode(self)
    }

    /// nil: a model without `@Table` maps no key paths.
    ///
    /// - Parameter keyPath: a key path of the model.
    /// - Returns: nil.
    public static func columnName(for keyPath: PartialKeyPath<Self>) -> String? { nil }

    /// None: a model without `@Table` declares no columns.
    public static var columnDeclarations: [ColumnDeclaration] { [] }
}
