import Foundation
import Sluice

/// A fresh database file in its own temporary folder, per test.
public struct TemporaryDatabase {
    public let directory: URL
    public var path: String { directory.appendingPathComponent("test.sqlite").path }

    public init() {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-tests-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    public func url(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// A store on the file, optionally migrated.
    public func store(migrations: [Migration] = []) throws -> Store {
        let store = try Store(path: path)
        if !migrations.isEmpty { try store.migrate(migrations) }
        return store
    }
}

/// Every table's schema and rows, in a stable form, to check that a failed
/// operation left the database exactly as it was.
public func dump(_ store: Store) throws -> [String] {
    try store.read { db in
        var lines: [String] = []
        let tables = try db.fetchRows(sql: "SELECT name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY name")
        for table in tables {
            lines.append("schema \(table[0]) \(table[1])")
        }
        for table in try db.fetchRows(sql: "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name") {
            guard case .text(let name) = table[0] else { continue }
            // Sorted as text: some tables (the full-text index's config) have no rowid.
            lines += try db.fetchRows(sql: "SELECT * FROM \"\(name)\"").map { row in
                "\(name) " + zip(row.columns, row.values).map { "\($0)=\($1.typeName):\($1)" }.joined(separator: " ")
            }.sorted()
        }
        return lines
    }
}

/// The dump of the database at a path, opened read-only.
public func dump(path: String) throws -> [String] {
    var configuration = Store.Configuration()
    configuration.readOnly = true
    return try dump(Store(path: path, configuration: configuration))
}
