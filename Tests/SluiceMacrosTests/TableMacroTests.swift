import MacroTesting
import SluiceMacrosImplementation
import SwiftSyntaxMacroExpansion
import Testing

@Suite(.timeLimit(.minutes(10)), .macros([
    "Table": MacroSpec(type: TableMacro.self, conformances: ["Model"]),
    "ColumnName": MacroSpec(type: ColumnNameMacro.self),
    "Transient": MacroSpec(type: TransientMacro.self),
    "Indexed": MacroSpec(type: IndexedMacro.self),
    "References": MacroSpec(type: ReferencesMacro.self),
], record: .missing))
struct TableMacroTests {
    /// `@Indexed` and `@References` reach the column declarations, a
    /// constant initial value becomes the DEFAULT, and `Date()` does not.
    @Test func declaresIndexesReferencesAndDefaults() {
        assertMacro {
            """
            @Table
            struct Post {
                var id: Int64?
                @References(Room.self, onDelete: .cascade) @Indexed var roomID: Int64
                var title: String = "untitled"
                var createdAt: Date = Date()
                var tags: [String] = []
            }
            """
        } expansion: {
            #"""
            struct Post {
                var id: Int64?
                var roomID: Int64
                var title: String = "untitled"
                var createdAt: Date = Date()
                var tags: [String] = []

                /// The columns, as `Codable` names them.
                enum CodingKeys: String, CodingKey {
                    case id
                    case roomID = "room_id"
                    case title
                    case createdAt = "created_at"
                    case tags
                }
            }

            extension Post: SluiceMacros._SluiceModel {
                /// The table the model lives in.
                static let tableName = "post"

                /// Reads the model from a row, column by column.
                init(row: SluiceMacros._SluiceRowReader) throws {
                    let _sluice_id: Int64? = try row["id"]
                    let _sluice_roomID: Int64 = try row["room_id"]
                    let _sluice_title: String = try row["title"]
                    let _sluice_createdAt: Date = try row["created_at"]
                    let _sluice_tags: [String] = try row["tags"]
                    self.id = _sluice_id
                    self.roomID = _sluice_roomID
                    self.title = _sluice_title
                    self.createdAt = _sluice_createdAt
                    self.tags = _sluice_tags
                }

                /// Writes the model's columns.
                func write(to row: inout SluiceMacros._SluiceRowWriter) throws {
                    try row.write(self.id, as: "id")
                    try row.write(self.roomID, as: "room_id")
                    try row.write(self.title, as: "title")
                    try row.write(self.createdAt, as: "created_at")
                    try row.write(self.tags, as: "tags")
                }

                /// The column of a stored property's key path.
                static func columnName(for keyPath: PartialKeyPath<Post>) -> String? {
                    if keyPath == \Post.id {
                        return "id"
                    }
                    if keyPath == \Post.roomID {
                        return "room_id"
                    }
                    if keyPath == \Post.title {
                        return "title"
                    }
                    if keyPath == \Post.createdAt {
                        return "created_at"
                    }
                    if keyPath == \Post.tags {
                        return "tags"
                    }
                    return nil
                }

                /// The stored properties' columns (for `Migration.table(for:version:)` and the store's check).
                static var columnDeclarations: [SluiceMacros._SluiceColumnDeclaration] {
                    [
                        .column("id", "id", Int64?.self, primaryKey: true),
                        .column("roomID", "room_id", Int64.self).indexed().references(Room.self, onDelete: .cascade),
                        .column("title", "title", String.self, default: "untitled"),
                        .column("createdAt", "created_at", Date.self),
                        .column("tags", "tags", [String].self, default: [])
                    ]
                }

                /// The primary key's type (`Identifiable`'s `ID`).
                typealias ID = Int64?

                /// Takes the id SQLite assigned.
                mutating func didInsert(rowID: Int64) {
                    self.id = rowID
                }
            }
            """#
        }
    }

    @Test func expandsAStruct() {
        assertMacro {
            """
            @Table
            public struct Person {
                public var id: Int64?
                public var firstName: String
                @ColumnName("years") var age: Int?
                @Transient var isSelected = false
                var fullName: String { firstName }
                static let shared = 1
            }
            """
        } expansion: {
            #"""
            public struct Person {
                public var id: Int64?
                public var firstName: String
                var age: Int?
                var isSelected = false
                var fullName: String { firstName }
                static let shared = 1

                /// The columns, as `Codable` names them.
                public enum CodingKeys: String, CodingKey {
                    case id
                    case firstName = "first_name"
                    case age = "years"
                }
            }

            extension Person: SluiceMacros._SluiceModel {
                /// The table the model lives in.
                public static let tableName = "person"

                /// Reads the model from a row, column by column.
                public init(row: SluiceMacros._SluiceRowReader) throws {
                    let _sluice_id: Int64? = try row["id"]
                    let _sluice_firstName: String = try row["first_name"]
                    let _sluice_age: Int? = try row["years"]
                    self.id = _sluice_id
                    self.firstName = _sluice_firstName
                    self.age = _sluice_age
                }

                /// Writes the model's columns.
                public func write(to row: inout SluiceMacros._SluiceRowWriter) throws {
                    try row.write(self.id, as: "id")
                    try row.write(self.firstName, as: "first_name")
                    try row.write(self.age, as: "years")
                }

                /// The column of a stored property's key path.
                public static func columnName(for keyPath: PartialKeyPath<Person>) -> String? {
                    if keyPath == \Person.id {
                        return "id"
                    }
                    if keyPath == \Person.firstName {
                        return "first_name"
                    }
                    if keyPath == \Person.age {
                        return "years"
                    }
                    return nil
                }

                /// The stored properties' columns (for `Migration.table(for:version:)` and the store's check).
                public static var columnDeclarations: [SluiceMacros._SluiceColumnDeclaration] {
                    [
                        .column("id", "id", Int64?.self, primaryKey: true),
                        .column("firstName", "first_name", String.self),
                        .column("age", "years", Int?.self)
                    ]
                }

                /// The primary key's type (`Identifiable`'s `ID`).
                public typealias ID = Int64?

                /// Takes the id SQLite assigned.
                public mutating func didInsert(rowID: Int64) {
                    self.id = rowID
                }
            }
            """#
        }
    }

    @Test func keepsWhatTheStructDeclares() {
        assertMacro {
            """
            @Table("people")
            struct Person {
                static let tableName = "ignored"
                var id: String
                var userURL: String
                enum CodingKeys: String, CodingKey { case id, userURL = "url" }
                init(row: RowReader) throws { id = try row["id"]; userURL = try row["url"] }
            }
            """
        } expansion: {
            #"""
            struct Person {
                static let tableName = "ignored"
                var id: String
                var userURL: String
                enum CodingKeys: String, CodingKey { case id, userURL = "url" 
            }
                init(row: RowReader) throws { id = try row["id"]; userURL = try row["url"] }
            }

            extension Person: SluiceMacros._SluiceModel {
                /// Writes the model's columns.
                func write(to row: inout SluiceMacros._SluiceRowWriter) throws {
                    try row.write(self.id, as: "id")
                    try row.write(self.userURL, as: "url")
                }

                /// The column of a stored property's key path.
                static func columnName(for keyPath: PartialKeyPath<Person>) -> String? {
                    if keyPath == \Person.id {
                        return "id"
                    }
                    if keyPath == \Person.userURL {
                        return "url"
                    }
                    return nil
                }

                /// The stored properties' columns (for `Migration.table(for:version:)` and the store's check).
                static var columnDeclarations: [SluiceMacros._SluiceColumnDeclaration] {
                    [
                        .column("id", "id", String.self, primaryKey: true),
                        .column("userURL", "url", String.self)
                    ]
                }

                /// The primary key's type (`Identifiable`'s `ID`).
                typealias ID = String
            }
            """#
        }
    }

    @Test func anIntIdIsSetAfterInsertAndAColumnNameMovesThePrimaryKey() {
        assertMacro {
            """
            @Table
            struct ProjectItem {
                @ColumnName("item_id") var id: Int?
                var projectID: Int
            }
            """
        } expansion: {
            #"""
            struct ProjectItem {
                var id: Int?
                var projectID: Int

                /// The columns, as `Codable` names them.
                enum CodingKeys: String, CodingKey {
                    case id = "item_id"
                    case projectID = "project_id"
                }
            }

            extension ProjectItem: SluiceMacros._SluiceModel {
                /// The table the model lives in.
                static let tableName = "project_item"

                /// The primary key's column.
                static var primaryKeyColumn: String {
                    "item_id"
                }

                /// Reads the model from a row, column by column.
                init(row: SluiceMacros._SluiceRowReader) throws {
                    let _sluice_id: Int? = try row["item_id"]
                    let _sluice_projectID: Int = try row["project_id"]
                    self.id = _sluice_id
                    self.projectID = _sluice_projectID
                }

                /// Writes the model's columns.
                func write(to row: inout SluiceMacros._SluiceRowWriter) throws {
                    try row.write(self.id, as: "item_id")
                    try row.write(self.projectID, as: "project_id")
                }

                /// The column of a stored property's key path.
                static func columnName(for keyPath: PartialKeyPath<ProjectItem>) -> String? {
                    if keyPath == \ProjectItem.id {
                        return "item_id"
                    }
                    if keyPath == \ProjectItem.projectID {
                        return "project_id"
                    }
                    return nil
                }

                /// The stored properties' columns (for `Migration.table(for:version:)` and the store's check).
                static var columnDeclarations: [SluiceMacros._SluiceColumnDeclaration] {
                    [
                        .column("id", "item_id", Int?.self, primaryKey: true),
                        .column("projectID", "project_id", Int.self)
                    ]
                }

                /// The primary key's type (`Identifiable`'s `ID`).
                typealias ID = Int?

                /// Takes the id SQLite assigned.
                mutating func didInsert(rowID: Int64) {
                    self.id = Int(rowID)
                }
            }
            """#
        }
    }

    /// Swift's memberwise initializer is internal at most: a public model gets a public one,
    /// the same parameters and defaults, in the struct (where it takes the implicit one's
    /// place). Not when the struct has an initializer, nor with a type Swift would infer.
    @Test func givesAPublicModelAPublicMemberwiseInitializer() {
        assertMacro {
            """
            @Table
            public struct Item {
                public var id: Int64?
                public let title: String
                public var weight: Int = 1
                let kind = "item"
                @Transient public var isSelected: Bool = false
            }
            """
        } expansion: {
            #"""
            public struct Item {
                public var id: Int64?
                public let title: String
                public var weight: Int = 1
                let kind = "item"
                public var isSelected: Bool = false

                /// Makes a model from each stored property's value, as Swift's memberwise initializer.
                public init(id: Int64? = nil, title: String, weight: Int = 1, isSelected: Bool = false) {
                    self.id = id
                    self.title = title
                    self.weight = weight
                    self.isSelected = isSelected
                }

                /// The columns, as `Codable` names them.
                public enum CodingKeys: String, CodingKey {
                    case id
                    case title
                    case weight
                }
            }

            extension Item: SluiceMacros._SluiceModel {
                /// The table the model lives in.
                public static let tableName = "item"

                /// Reads the model from a row, column by column.
                public init(row: SluiceMacros._SluiceRowReader) throws {
                    let _sluice_id: Int64? = try row["id"]
                    let _sluice_title: String = try row["title"]
                    let _sluice_weight: Int = try row["weight"]
                    self.id = _sluice_id
                    self.title = _sluice_title
                    self.weight = _sluice_weight
                }

                /// Writes the model's columns.
                public func write(to row: inout SluiceMacros._SluiceRowWriter) throws {
                    try row.write(self.id, as: "id")
                    try row.write(self.title, as: "title")
                    try row.write(self.weight, as: "weight")
                }

                /// The column of a stored property's key path.
                public static func columnName(for keyPath: PartialKeyPath<Item>) -> String? {
                    if keyPath == \Item.id {
                        return "id"
                    }
                    if keyPath == \Item.title {
                        return "title"
                    }
                    if keyPath == \Item.weight {
                        return "weight"
                    }
                    return nil
                }

                /// The stored properties' columns (for `Migration.table(for:version:)` and the store's check).
                public static var columnDeclarations: [SluiceMacros._SluiceColumnDeclaration] {
                    [
                        .column("id", "id", Int64?.self, primaryKey: true),
                        .column("title", "title", String.self),
                        .column("weight", "weight", Int.self, default: 1)
                    ]
                }

                /// The primary key's type (`Identifiable`'s `ID`).
                public typealias ID = Int64?

                /// Takes the id SQLite assigned.
                public mutating func didInsert(rowID: Int64) {
                    self.id = rowID
                }
            }
            """#
        }
        assertMacro {
            """
            @Table
            public struct Inferred {
                public var id: Int64?
                @Transient public var isSelected = false
            }
            """
        } expansion: {
            #"""
            public struct Inferred {
                public var id: Int64?
                public var isSelected = false

                /// The columns, as `Codable` names them.
                public enum CodingKeys: String, CodingKey {
                    case id
                }
            }

            extension Inferred: SluiceMacros._SluiceModel {
                /// The table the model lives in.
                public static let tableName = "inferred"

                /// Reads the model from a row, column by column.
                public init(row: SluiceMacros._SluiceRowReader) throws {
                    let _sluice_id: Int64? = try row["id"]
                    self.id = _sluice_id
                }

                /// Writes the model's columns.
                public func write(to row: inout SluiceMacros._SluiceRowWriter) throws {
                    try row.write(self.id, as: "id")
                }

                /// The column of a stored property's key path.
                public static func columnName(for keyPath: PartialKeyPath<Inferred>) -> String? {
                    if keyPath == \Inferred.id {
                        return "id"
                    }
                    return nil
                }

                /// The stored properties' columns (for `Migration.table(for:version:)` and the store's check).
                public static var columnDeclarations: [SluiceMacros._SluiceColumnDeclaration] {
                    [
                        .column("id", "id", Int64?.self, primaryKey: true)
                    ]
                }

                /// The primary key's type (`Identifiable`'s `ID`).
                public typealias ID = Int64?

                /// Takes the id SQLite assigned.
                public mutating func didInsert(rowID: Int64) {
                    self.id = rowID
                }
            }
            """#
        }
    }

    @Test func refusesAClass() {
        assertMacro {
            """
            @Table
            class Person {
                var id: Int64?
            }
            """
        } diagnostics: {
            """
            @Table
            ┬─────
            ╰─ 🛑 @Table applies to a struct, not to a class; models are value types
            class Person {
                var id: Int64?
            }
            """
        }
    }

    @Test func refusesAPropertyWithoutAType() {
        assertMacro {
            """
            @Table
            struct Counter {
                var id: Int64?
                var count = 0
            }
            """
        } diagnostics: {
            """
            @Table
            struct Counter {
                var id: Int64?
                var count = 0
                    ┬────────
                    ╰─ 🛑 @Table needs the type of 'count' written out (for example 'var count: Int = 0') to read and write its column
            }
            """
        }
    }

    @Test func refusesATransientPropertyWithoutADefaultAndAStructWithoutID() {
        assertMacro {
            """
            @Table
            struct Note {
                var title: String
                @Transient var cache: String
            }
            """
        } diagnostics: {
            """
            @Table
            struct Note {
                var title: String
                @Transient var cache: String
                               ┬────────────
                               ╰─ 🛑 @Transient property 'cache' needs a default value: it is not read from the row
            }
            """
        }
        assertMacro {
            """
            @Table
            struct Note {
                var title: String
            }
            """
        } diagnostics: {
            """
            @Table
            struct Note {
                   ┬───
                   ╰─ 🛑 @Table struct Note needs an 'id' property: its primary key (Identifiable's id)
                var title: String
            }
            """
        }
    }

    @Test func refusesANameThatIsNotALiteral() {
        assertMacro {
            """
            @Table(name)
            struct Note {
                var id: Int64?
                @ColumnName(column) var title: String
            }
            """
        } diagnostics: {
            """
            @Table(name)
            ┬───────────
            ╰─ 🛑 @Table takes the table's name as a string literal, for example @Table("people")
            struct Note {
                var id: Int64?
                @ColumnName(column) var title: String
                ┬──────────────────
                ╰─ 🛑 @ColumnName takes the column's name as a string literal, for example @ColumnName("first_name")
            }
            """
        }
    }
}
