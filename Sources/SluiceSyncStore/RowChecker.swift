import Foundation
import Sluice
import SluiceSyncPolicy
import SluiceSyncProtocol

/// Checks the rows a push leaves against the CHECK constraints of the registered tables'
/// `CREATE TABLE` statements, with SQLite itself: each row is inserted into an empty copy
/// of its table (in memory, in a savepoint that is rolled back), so a value every device
/// would refuse (`weight = -1` against `CHECK (weight >= 0)`) is refused by the service
/// instead, before it reaches any device.
///
/// Every registered statement is run (a table's foreign keys need their parents; parents
/// that are not registered get empty stand-ins). Foreign keys are deferred and never
/// checked (the copies are empty; references are checked as global ids by ``SyncSchema``),
/// and UNIQUE constraints cannot be (each row is checked alone).
public final class RowChecker: Sendable {
    private let store: Store
    /// The registered tables with a CHECK constraint, by lowercased name.
    private let checked: [String: SyncSchema.Table]

    /// A checker for `schema`'s tables that have a statement with a CHECK constraint; nil
    /// when none has.
    public init?(_ schema: SyncSchema) throws {
        let checked = schema.tables.filter { table in
            guard let sql = table.sql?.trimmingCharacters(in: .whitespacesAndNewlines) else { return false }
            return sql.uppercased().hasPrefix("CREATE TABLE") && sql.uppercased().contains("CHECK")
        }
        guard !checked.isEmpty else { return nil }
        var configuration = Store.Configuration()
        configuration.logsChanges = false
        let store = try Store.inMemory(configuration: configuration)
        try store.write { db in
            for table in schema.tables {
                guard let sql = table.sql, sql.trimmingCharacters(in: .whitespacesAndNewlines).uppercased().hasPrefix("CREATE TABLE") else { continue }
                do {
                    try db.execute(sql: sql)
                } catch {
                    throw SyncErrorBody(.invalidSchema, message: "the registered statement of \(table.name) does not run: \(error)")
                }
            }
            // The tables they reference, when not registered (SQLite needs them to run an
            // INSERT, even with foreign keys deferred): empty stand-ins with the keys named.
            let existing = Set(try db.tableNames().map { $0.lowercased() })
            var missing: [String: Set<String>] = [:]
            for table in checked {
                for key in try db.fetchRows(sql: "SELECT \"table\", \"to\" FROM pragma_foreign_key_list(?)", arguments: [.text(table.name)]) {
                    guard case .text(let parent) = key[0], !existing.contains(parent.lowercased()) else { continue }
                    if case .text(let column) = key[1] { missing[parent, default: []].insert(column) } else { missing[parent, default: []].formUnion([]) }
                }
            }
            for (parent, columns) in missing {
                let keys = columns.isEmpty ? "id INTEGER PRIMARY KEY" : columns.sorted().map { "\(quoteIdentifier($0)) UNIQUE" }.joined(separator: ", ")
                try db.execute(sql: "CREATE TABLE \(quoteIdentifier(parent)) (\(keys))")
            }
        }
        self.store = store
        self.checked = Dictionary(checked.map { ($0.name.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Whether rows of `table` are checked.
    public func checks(_ table: String) -> Bool { checked[table.lowercased()] != nil }

    /// Checks `rows`; the error names the first row that fails and the constraint.
    public func check(_ rows: [PushRows.Candidate]) throws {
        guard !rows.isEmpty else { return }
        struct Undo: Error {}
        let failure: SyncErrorBody? = try store.write { db in
            try db.execute(sql: "PRAGMA defer_foreign_keys = ON")
            for row in rows {
                guard let table = checked[row.table.lowercased()] else { continue }
                let pairs = row.values.sorted { $0.key < $1.key }
                let columns = pairs.map { quoteIdentifier($0.key) }.joined(separator: ", ")
                let placeholders = Array(repeating: "?", count: pairs.count).joined(separator: ", ")
                let sql = pairs.isEmpty ? "INSERT INTO \(quoteIdentifier(table.name)) DEFAULT VALUES"
                    : "INSERT INTO \(quoteIdentifier(table.name)) (\(columns)) VALUES (\(placeholders))"
                do {
                    try db.savepoint { db in
                        try db.execute(sql: sql, arguments: pairs.map { pair in
                            // A reference is checked as a global id by the schema; here it only needs a value.
                            if case .reference = pair.value { SQLiteValue.integer(1) } else { pair.value.sqliteValue }
                        })
                        throw Undo()
                    }
                } catch is Undo {
                    continue
                } catch let error as StoreError where error.code == .constraint {
                    return SyncErrorBody(.invalid, message: "\(row.place): \(table.name) \(row.id): \(error.message)")
                }
            }
            return nil
        }
        if let failure { throw failure }
    }
}
