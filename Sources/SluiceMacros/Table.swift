@_exported import Sluice

/// Makes a struct a `Model` stored in one table, with fast column-by-column
/// reading and writing and the key-path map of the typed API.
///
/// ```swift
/// import SluiceMacros
///
/// @Table                                  // table "person" (the type's name, snake_case)
/// struct Person {
///     var id: Int64?                      // the primary key; set after an insert
///     var firstName: String               // column "first_name"
///     @ColumnName("years") var age: Int?  // column "years"
///     @Transient var isSelected = false   // not a column
/// }
///
/// let adults = store.objects(Person.self).filter(\.age >= 18).sorted(by: \.firstName)
/// ```
///
/// It derives `tableName` (`@Table("people")` overrides it), `CodingKeys`
/// with the column names (so `Codable` agrees), `init(row:)` and
/// `write(to:)` (each column read or bound directly, no `Codable`
/// dispatch), `columnName(for:)` (key path → column), and
/// `didInsert(rowID:)` when `id` is an optional integer, and
/// `columnDeclarations` (each column's type, nullability, constant default,
/// `@Indexed` and `@References`: what `Migration.table(for:version:)` creates
/// and what a store checks when it opens). Anything you write yourself is kept. Properties of `SQLiteValueConvertible` types take one
/// column each; other `Codable` properties are stored as JSON text.
@attached(member, names: named(CodingKeys), named(init))
@attached(extension, conformances: Model, names: named(tableName), named(primaryKeyColumn), named(init(row:)), named(write(to:)), named(columnDeclarations),
          named(columnName(for:)), named(didInsert(rowID:)), named(ID))
public macro Table(_ name: String? = nil) = #externalMacro(module: "SluiceMacrosPlugin", type: "TableMacro")

/// The column a stored property of a `@Table` struct is stored in, when
/// it is not the snake_case of the property's name.
@attached(peer)
public macro ColumnName(_ name: String) = #externalMacro(module: "SluiceMacrosPlugin", type: "ColumnNameMacro")

/// A stored property of a `@Table` struct that is not a column (it needs a
/// default value: it is not read from rows).
@attached(peer)
public macro Transient() = #externalMacro(module: "SluiceMacrosPlugin", type: "TransientMacro")

/// A stored property of a `@Table` struct whose column gets an index of its
/// own (`table_column`) in a migration made from the model
/// (`Migration.table(for:version:)`).
@attached(peer)
public macro Indexed() = #externalMacro(module: "SluiceMacrosPlugin", type: "IndexedMacro")

/// A stored property of a `@Table` struct that holds another model's primary
/// key: its column `REFERENCES` that model's table in a migration made from
/// the model, with what a delete there does (`.cascade`, `.setNull`, ...).
///
/// ```swift
/// @References(Person.self, onDelete: .cascade) var recipientID: Int64
/// ```
@attached(peer)
public macro References<M: Model>(_ model: M.Type, onDelete: ForeignKeyAction = .noAction) =
    #externalMacro(module: "SluiceMacrosPlugin", type: "ReferencesMacro")

// The names the expansion uses, qualified by this module: the `Store`
// module has a `Store` class, so `Store.Model` in an app's code means the
// class's member, not the module's protocol.

/// `Model`, as `@Table` expansions name it.
public typealias _SluiceModel = Model
/// `RowReader`, as `@Table` expansions name it.
public typealias _SluiceRowReader = RowReader
/// `RowWriter`, as `@Table` expansions name it.
public typealias _SluiceRowWriter = RowWriter
/// The column declarations' type, named in `@Table`'s expansion (not API).
public typealias _SluiceColumnDeclaration = ColumnDeclaration
