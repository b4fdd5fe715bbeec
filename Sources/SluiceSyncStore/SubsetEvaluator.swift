import Foundation
import Sluice
import SluiceSyncPolicy
import SluiceSyncProtocol

/// Decides which rows a device's subscription keeps, with SQLite and the store's own filter
/// compiler (as the device does): the rows are put in an in-memory copy of their table, with
/// the rows they point at in copies of those tables, and the filter runs there.
///
/// A copy has the registered columns with their affinities (so comparisons convert values
/// as on the device), a hidden global id, and the foreign keys of the registered schema (so
/// `recipient.city` resolves); the parents' copies have no foreign keys of their own, so a
/// path of two steps, or to a list, does not resolve and the subscription is refused.
public struct SubsetEvaluator {
    /// A subscription checked against the registered schema.
    public struct Checked: Sendable {
        public var table: SyncSchema.Table
        public var filter: Filter?
        /// Foreign-key columns a path of the filter goes through (their parents' changes
        /// can change which rows the filter keeps).
        public var pathColumns: [SyncSchema.Column]
    }

    /// The hidden columns of the copies.
    static let key = "__sluice_key"
    static let gid = "__sluice_gid"

    /// Parses a subscription's filter and checks it against `schema`.
    ///
    /// - Throws: `SyncErrorBody` (`invalid`) naming the table, the filter and what is wrong.
    public static func check(_ subscription: SyncSubscription, schema: SyncSchema) throws -> Checked {
        guard let table = schema.table(named: subscription.table) else {
            throw SyncErrorBody(.invalid, message: "subscription to unknown table '\(subscription.table)'")
        }
        guard let query = subscription.filter else { return Checked(table: table, filter: nil, pathColumns: []) }
        let filter: Filter
        do {
            filter = try Filter(query, arguments: (subscription.arguments ?? []).map(\.sqliteValue))
        } catch let error as StoreError {
            throw SyncErrorBody(.invalid, message: "subscription to \(table.name): \(error.message)")
        }
        var paths: [SyncSchema.Column] = []
        try visit(filter.predicate) { operand in
            guard case .column(let name, _) = operand, name.contains(".") else { return }
            let segments = name.split(separator: ".", omittingEmptySubsequences: false)
            let wanted = normalized(String(segments[0]))
            guard segments.count == 2, let column = table.columns.first(where: { column in
                guard column.references != nil else { return false }
                let own = normalized(column.name)
                return own == wanted || (own.hasSuffix("id") && own.count > 2 && String(own.dropLast(2)) == wanted)
            }) else {
                throw SyncErrorBody(.invalid, message: """
                    subscription to \(table.name): '\(name)' is not a path through a foreign key of \(table.name) to one column \
                    (subscriptions follow references to one row, as in recipient.city)
                    """)
            }
            guard column.references?.lowercased() != table.name.lowercased() else {
                throw SyncErrorBody(.invalid, message: "subscription to \(table.name): '\(name)' follows a reference of \(table.name) to itself, which subscriptions do not")
            }
            if !paths.contains(column) { paths.append(column) }
        } refusing: { what in
            SyncErrorBody(.invalid, message: "subscription to \(table.name): \(what) is not supported in a subscription (the service keeps no full-text index and no lists of related rows)")
        }
        let checked = Checked(table: table, filter: filter, pathColumns: paths)
        // Unknown columns and the like: the filter runs once on the empty copies.
        _ = try kept([], by: checked, parents: [], schema: schema)
        return checked
    }

    private static func visit(_ predicate: Sluice.Predicate, _ operand: (Operand) throws -> Void, refusing: (String) -> SyncErrorBody) throws {
        switch predicate {
        case .comparison(let lhs, _, let rhs, _), .string(let lhs, _, let rhs, _):
            try operand(lhs)
            try operand(rhs)
        case .isNull(let value, _): try operand(value)
        case .in(let value, let list, _): try ([value] + list).forEach(operand)
        case .between(let value, let low, let high, _): try [value, low, high].forEach(operand)
        case .and(let lhs, let rhs), .or(let lhs, let rhs):
            try visit(lhs, operand, refusing: refusing)
            try visit(rhs, operand, refusing: refusing)
        case .not(let inner): try visit(inner, operand, refusing: refusing)
        case .constant: break
        case .quantified: throw refusing("ANY, ALL or NONE")
        case .counted: throw refusing("SUBQUERY")
        case .match: throw refusing("MATCH")
        }
    }

    /// Names compared as the store compares relationship names: without case and underscores.
    private static func normalized(_ name: String) -> String {
        name.lowercased().replacingOccurrences(of: "_", with: "")
    }

    /// A row as stored by the service.
    public typealias Row = StoredRow

    /// The ids of `rows` (all of `subscription`'s table) that its filter keeps; `parents`
    /// holds the rows they point at through the filter's paths.
    public static func kept(_ rows: [Row], by subscription: Checked, parents: [Row], schema: SyncSchema) throws -> Set<String> {
        guard let filter = subscription.filter else { return Set(rows.map(\.id)) }
        var configuration = Store.Configuration()
        configuration.logsChanges = false
        let store = try Store.inMemory(configuration: configuration)
        let table = subscription.table
        // Every table it points at (SQLite wants a foreign key's table when a row is
        // inserted); only the paths' parents get rows.
        let parentTables = Set(table.columns.compactMap(\.references).map { $0.lowercased() })
            .subtracting([table.name.lowercased()]).compactMap { schema.table(named: $0) }
        return try store.write { db in
            try db.execute(sql: "PRAGMA defer_foreign_keys = ON")
            try db.execute(sql: createSQL(table, foreignKeys: true))
            for parent in parentTables { try db.execute(sql: createSQL(parent, foreignKeys: false)) }
            // Parents first, then the rows, their references as the parents' keys.
            var keys: [String: [String: Int64]] = [:]
            for row in parents {
                guard let parent = parentTables.first(where: { $0.name.lowercased() == row.table.lowercased() }) else { continue }
                keys[parent.name.lowercased(), default: [:]][row.id] = try insert(row, into: parent, keys: nil, db)
            }
            for row in rows { _ = try insert(row, into: table, keys: keys, db) }
            var kept: Set<String> = []
            do {
                for row in try db.fetchRows(table: table.name, filter: filter) {
                    if case .text(let gid)? = row[Self.gid] { kept.insert(gid) }
                }
            } catch let error as StoreError {
                throw SyncErrorBody(.invalid, message: "subscription to \(table.name): \(error.message)")
            }
            return kept
        }
    }

    /// Inserts a row; references become the parents' keys (NULL when the parent is not
    /// there, or with `keys` nil). Returns its key.
    private static func insert(_ row: Row, into table: SyncSchema.Table, keys: [String: [String: Int64]]?, _ db: Database) throws -> Int64 {
        var columns = [quoteIdentifier(gid)]
        var arguments: [SQLiteValue] = [.text(row.id)]
        for column in table.columns {
            guard let value = row.values[column.name] else { continue }
            columns.append(quoteIdentifier(column.name))
            if case .reference(let target) = value {
                let key = column.references.flatMap { keys?[$0.lowercased()]?[target] }
                arguments.append(key.map { .integer($0) } ?? .null)
            } else {
                arguments.append(value.sqliteValue)
            }
        }
        let placeholders = Array(repeating: "?", count: columns.count).joined(separator: ", ")
        try db.execute(sql: "INSERT OR REPLACE INTO \(quoteIdentifier(table.name)) (\(columns.joined(separator: ", "))) VALUES (\(placeholders))",
                       arguments: arguments)
        return db.lastInsertedRowID
    }

    /// A copy of a registered table: its columns with their affinities, the hidden key and
    /// global id, and (with `foreignKeys`) its references.
    private static func createSQL(_ table: SyncSchema.Table, foreignKeys: Bool) -> String {
        var parts = ["\(quoteIdentifier(key)) INTEGER PRIMARY KEY", "\(quoteIdentifier(gid)) TEXT NOT NULL UNIQUE"]
        for column in table.columns {
            let type = switch column.type {
            case .integer: " INTEGER"
            case .real: " REAL"
            case .text: " TEXT"
            case .blob: " BLOB"
            case .numeric: " NUMERIC"
            case .any: ""
            }
            let reference = foreignKeys ? column.references.map { " REFERENCES \(quoteIdentifier($0))" } ?? "" : ""
            parts.append(quoteIdentifier(column.name) + (column.references != nil ? " INTEGER" : type) + reference)
        }
        return "CREATE TABLE \(quoteIdentifier(table.name)) (\(parts.joined(separator: ", ")))"
    }
}
