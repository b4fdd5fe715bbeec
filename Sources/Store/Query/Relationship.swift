import SluiceNaming

/// Finds the tables a filter's relationship paths lead to.
struct SchemaLookup {
    /// A table by name.
    let table: (String) throws -> TableInfo
    /// The app's tables.
    let tableNames: () throws -> [String]
    /// The columns of a table's full-text index (`FullTextNaming`), nil when it has none.
    var fullTextColumns: (String) throws -> [String]? = { _ in nil }
    /// Why SQLite refuses a full-text query on an index (restricted to a
    /// column, or not): its message, or nil when the query runs.
    var fullTextProblem: (_ index: String, _ column: String?, _ query: String) -> String? = { _, _, _ in nil }
}

/// A table a filter's relationship paths read, joined straight to the
/// queried table: its subqueries correlate on `related.relatedColumn =
/// main.mainColumn`. A commit that changes some of its rows can change the
/// filter's value only for the rows of the queried table this joins them to.
struct RelationshipLink: Hashable, Sendable {
    let table: String
    let relatedColumn: String
    let mainColumn: String
}

/// A relationship of a table, found from foreign keys: what `recipient`
/// in `recipient.city` or `contents` in `contents.@count` names.
///
/// - To one: a foreign-key column of this table (`package.recipient_id →
///   person.id`), named by the column (`recipient_id`) or by the column
///   without its `_id`/`id` suffix (`recipient`; Swift spellings such as
///   `recipientID` work too).
/// - To many: the rows of another table whose foreign key points at this
///   one (`package_content.package_id → package.id`), named by that table
///   (`package_content`), by it without this table's name as a prefix
///   (`content`), or by either with an `s` (`contents`); `table(column)`
///   picks one foreign key when a table has several.
enum Relationship {
    case toOne(column: String, target: TableInfo, targetColumn: String)
    case toMany(child: TableInfo, column: String, parentColumn: String)

    /// Names compared without case and underscores.
    private static func normalized(_ name: String) -> String {
        ColumnNaming.snakeCase(name).lowercased().replacingOccurrences(of: "_", with: "")
    }

    /// The column a foreign key references: its declared parent column, or the parent's single primary key (the rowid).
    private static func referenced(_ key: TableInfo.ForeignKey, in parent: TableInfo) -> String {
        if let column = key.parentColumn { return column }
        return parent.primaryKey.count == 1 ? parent.primaryKey[0] : "rowid"
    }

    /// The relationship `name` of `table`; throws a message listing what there is when none (or several) match.
    static func resolve(_ name: String, from table: TableInfo, schema: SchemaLookup) throws -> Relationship {
        let wanted = normalized(name)
        var found: [(String, Relationship)] = []
        for key in table.foreignKeys {
            let column = normalized(key.column)
            var names = [column]
            for suffix in ["id"] where column.hasSuffix(suffix) && column.count > suffix.count { names.append(String(column.dropLast(suffix.count))) }
            guard names.contains(wanted) else { continue }
            let target = try schema.table(key.parentTable)
            found.append((key.column, .toOne(column: key.column, target: target, targetColumn: referenced(key, in: target))))
        }
        // `child(column)`: one foreign key of a child table.
        var childName = name
        var childColumn: String?
        if name.hasSuffix(")"), let open = name.firstIndex(of: "(") {
            childName = String(name[..<open])
            childColumn = String(name[name.index(after: open)..<name.index(before: name.endIndex)])
        }
        let wantedChild = normalized(childName)
        let parentPrefix = normalized(table.name)
        for (child, key) in try children(of: table, schema: schema) {
            if let childColumn, key.column.lowercased() != childColumn.lowercased() { continue }
            let base = normalized(child.name)
            var names = [base, base + "s"]
            if base.hasPrefix(parentPrefix), base.count > parentPrefix.count {
                let short = String(base.dropFirst(parentPrefix.count))
                names += [short, short + "s"]
            }
            guard names.contains(wantedChild) else { continue }
            found.append(("\(child.name)(\(key.column))", .toMany(child: child, column: key.column, parentColumn: referenced(key, in: table))))
        }
        if found.count == 1 { return found[0].1 }
        if found.count > 1 {
            throw StoreError(code: .invalidQuery, message: "'\(name)' could mean several relationships of table \(table.name): "
                             + found.map(\.0).joined(separator: ", ") + "; name one")
        }
        throw StoreError(code: .unknownColumn, message: "unknown relationship '\(name)' of table \(table.name) (\(try describe(table, schema: schema)))")
    }

    /// The tables with a foreign key that points at `table`, with that key.
    private static func children(of table: TableInfo, schema: SchemaLookup) throws -> [(TableInfo, TableInfo.ForeignKey)] {
        try schema.tableNames().flatMap { name -> [(TableInfo, TableInfo.ForeignKey)] in
            let child = try schema.table(name)
            return child.foreignKeys.filter { $0.parentTable.lowercased() == table.name.lowercased() }.map { (child, $0) }
        }
    }

    /// What relationships a table has, for error messages.
    static func describe(_ table: TableInfo, schema: SchemaLookup) throws -> String {
        var names = table.foreignKeys.map { key -> String in
            let column = key.column
            return column.lowercased().hasSuffix("_id") ? String(column.dropLast(3)) : column
        }
        names += try children(of: table, schema: schema).map { child, key in "\(child.name)(\(key.column))" }
        return names.isEmpty ? "it has no foreign keys, and none points at it" : "relationships: " + names.joined(separator: ", ")
    }
}
