import Foundation
import SluiceSyncProtocol
import Sluice

extension SyncSchema {
    /// The schema of `tables` as `db` has them: what a sync service registers so that it
    /// refuses changes that do not fit. The integer primary key is left out (rows are
    /// named by global id); foreign keys to other synced tables become references.
    ///
    /// - Parameters:
    ///   - db: a database the tables are in.
    ///   - tables: the synced tables.
    ///   - attachments: the blob columns whose values travel out of line, as
    ///     `"table.column"` (``SyncConfiguration/attachments``).
    /// - Throws: `StoreError` (`.unknownTable`, or `.unsupportedTable` for a table
    ///   whose primary key is not an integer; `.unknownColumn` or `.typeMismatch` for an
    ///   attachment that is not a blob column of a synced table).
    public init(_ db: Database, tables: [String], attachments: [String] = []) throws {
        let names = try tables.map { try db.tableInfo($0).name }
        let synced = Set(names.map { $0.lowercased() })
        var result: [Table] = []
        for name in names {
            let info = try db.tableInfo(name)
            let references = Self.references(of: info, synced: synced)
            let key = info.hasIntegerPrimaryKey ? info.primaryKey.first?.lowercased() : nil
            var actions: [String: ReferenceAction] = [:]
            for row in try db.fetchRows(sql: "SELECT \"from\", on_delete FROM pragma_foreign_key_list(?)", arguments: [.text(info.name)]) {
                if case .text(let column) = row[0], case .text(let action) = row[1] { actions[column.lowercased()] = ReferenceAction(rawValue: action.uppercased()) }
            }
            let columns = info.columns.filter { $0.name.lowercased() != key && !$0.isGenerated }.map { column in
                let parent = references[column.name.lowercased()]
                return Column(name: column.name, type: column.declaredType.isEmpty ? .any : ColumnType(column.affinity), isNullable: !column.isNotNull,
                              hasDefault: column.hasDefault, references: parent, onDelete: parent == nil ? nil : actions[column.name.lowercased()],
                              isAttachment: attachments.contains { $0.lowercased() == "\(info.name.lowercased()).\(column.name.lowercased())" })
            }
            let sql = try db.fetchRows(sql: "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?", arguments: [.text(info.name)]).first?[0]
            result.append(Table(name: info.name, columns: columns, sql: { if case .text(let text)? = sql { text } else { nil } }()))
        }
        for name in attachments {
            let parts = name.split(separator: ".", maxSplits: 1).map(String.init)
            guard parts.count == 2, let table = result.first(where: { $0.name.lowercased() == parts[0].lowercased() }) else {
                throw StoreError(code: .unknownTable, message: "attachment '\(name)': not a column of a synced table (write \"table.column\")")
            }
            guard let column = table.column(named: parts[1]), column.references == nil else {
                throw StoreError(code: .unknownColumn, message: "attachment '\(name)': \(table.name) has no such column, or it is a foreign key")
            }
            guard column.type == .blob || column.type == .any else {
                throw StoreError(code: .typeMismatch, message: "attachment '\(name)': the column is \(column.type.rawValue); an attachment is a BLOB column")
            }
            guard column.isNullable else {
                throw StoreError(code: .typeMismatch, message: "attachment '\(name)' is NOT NULL; an attachment column holds NULL on a device until its bytes are there")
            }
        }
        self.init(tables: result)
    }

    /// The foreign-key columns of `info` (lowercased) that point at a synced table, with
    /// that table's lowercased name: the columns whose values travel as references.
    package static func references(of info: TableInfo, synced: Set<String>) -> [String: String] {
        var references: [String: String] = [:]
        for key in info.foreignKeys where synced.contains(key.parentTable.lowercased()) {
            references[key.column.lowercased()] = key.parentTable.lowercased()
        }
        return references
    }
}

extension SyncSchema.ColumnType {
    package init(_ affinity: TableInfo.Affinity) {
        switch affinity {
        case .integer: self = .integer
        case .real: self = .real
        case .text: self = .text
        case .blob: self = .blob
        case .numeric: self = .numeric
        }
    }
}
