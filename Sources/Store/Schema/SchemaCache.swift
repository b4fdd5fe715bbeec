
/// What one connection knows of the schema: table names, each table's
/// columns, keys and kind, and column collations. It is dropped whenever
/// the schema may have changed: at the start of every transaction when
/// `PRAGMA schema_version` moved (another connection changed it), and after
/// any statement of this connection that creates, drops or alters something.
///
/// Identifiers in generated SQL come only from here, never from input.
final class SchemaCache {
    private unowned let connection: Connection
    private var tables: [String: TableInfo] = [:]
    private var names: [String]?
    /// Whether a table exists, by lower-cased name (``hasTable(_:)``).
    private var existing: [String: Bool] = [:]
    private var version: Int64 = -1
    /// Goes up each time the cache is dropped, so users of a `TableInfo`
    /// can tell cheaply that they must look again.
    private(set) var generation = 0

    init(connection: Connection) {
        self.connection = connection
    }

    /// Drops everything (a statement of this connection changed the schema).
    func invalidate() {
        tables.removeAll()
        names = nil
        existing.removeAll()
        version = -1
        generation += 1
    }

    /// Drops everything when `PRAGMA schema_version` moved since the last look.
    func refreshIfChanged() {
        let current: Int64 = (try? connection.scalarInt(sql: "PRAGMA schema_version")) ?? -2
        guard current != version else { return }
        invalidate()
        version = current
    }

    /// The names of the app's tables and views, sorted (SQLite's and Sluice's own left out).
    func tableNames() throws -> [String] {
        if let names { return names }
        let statement = try connection.cachedStatement(sql: """
            SELECT name FROM sqlite_schema
            WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE 'sluice\\_%' ESCAPE '\\'
            ORDER BY name
            """)
        defer { statement.reset() }
        var found: [String] = []
        while try statement.step() {
            if case .text(let name) = statement.value(at: 0) { found.append(name) }
        }
        names = found
        return found
    }

    /// Whether a table named `name` exists (Sluice's own included; SQLite
    /// names are ASCII case-insensitive), looked up in `sqlite_schema` once
    /// per schema version.
    func hasTable(_ name: String) throws -> Bool {
        let key = name.lowercased()
        if let known = existing[key] { return known }
        let statement = try connection.cachedStatement(sql: "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE")
        defer { statement.reset() }
        try statement.bind([.text(name)])
        let found = try statement.step()
        existing[key] = found
        return found
    }

    /// A table's columns, primary key and kind. Sluice's own `sluice_*`
    /// tables are readable too.
    ///
    /// - Throws: `StoreError.Code.unknownTable`, listing the tables there are.
    func tableInfo(_ table: String) throws -> TableInfo {
        if let info = tables[table] { return info }
        guard let name = try resolve(table) else {
            let names = try tableNames()
            let list = names.isEmpty ? "the database has no tables; run the migrations first" : "tables: \(names.joined(separator: ", "))"
            throw StoreError(code: .unknownTable, message: "unknown table '\(table)' (\(list))")
        }
        let info = try read(name)
        tables[table] = info
        return info
    }

    /// The schema's spelling of a table name (SQLite names are ASCII case-insensitive).
    private func resolve(_ table: String) throws -> String? {
        let names = try tableNames()
        if let exact = names.first(where: { $0 == table }) { return exact }
        let lowered = table.lowercased()
        if let match = names.first(where: { $0.lowercased() == lowered }) { return match }
        guard lowered.hasPrefix("sluice_") else { return nil }
        let statement = try connection.cachedStatement(sql: "SELECT name FROM sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE")
        defer { statement.reset() }
        try statement.bind([.text(table)])
        guard try statement.step(), case .text(let name) = statement.value(at: 0) else { return nil }
        return name
    }

    private func rows(_ sql: String, _ arguments: [SQLiteValue] = []) throws -> [[SQLiteValue]] {
        let statement = try connection.prepare(sql: sql)
        try statement.bind(arguments)
        var rows: [[SQLiteValue]] = []
        while try statement.step() {
            rows.append((0..<Int32(statement.columnCount)).map { statement.value(at: $0) })
        }
        return rows
    }

    private func read(_ name: String) throws -> TableInfo {
        let quoted = quoteIdentifier(name)
        // > PRAGMA table_xinfo: This pragma returns one row for each column in
        // > the named table, including generated columns and hidden columns.
        // cid, name, type, notnull, dflt_value, pk, hidden (0 normal, 1 hidden
        // in a virtual table, 2 generated VIRTUAL, 3 generated STORED).
        var columns: [TableInfo.Column] = []
        var keyParts: [(Int64, String)] = []
        for row in try rows("PRAGMA table_xinfo(\(quoted))") {
            guard row.count >= 7, case .text(let columnName) = row[1] else { continue }
            let hidden = Int64(sqliteValue: row[6]) ?? 0
            if hidden == 1 { continue }    // not part of SELECT *
            let pk = Int64(sqliteValue: row[5]) ?? 0
            columns.append(TableInfo.Column(
                name: columnName,
                declaredType: String(sqliteValue: row[2]) ?? "",
                isNotNull: (Int64(sqliteValue: row[3]) ?? 0) != 0,
                hasDefault: !row[4].isNull,
                isPrimaryKey: pk > 0,
                isGenerated: hidden == 2 || hidden == 3))
            if pk > 0 { keyParts.append((pk, columnName)) }
        }
        var kind = TableInfo.Kind.table
        // > PRAGMA table_list: type is "table", "view", "shadow" or "virtual";
        // > wr is 1 if the table is a WITHOUT ROWID table.
        if let row = try rows("PRAGMA main.table_list(\(quoted))").first, row.count >= 5 {
            switch String(sqliteValue: row[2]) {
            case "view": kind = .view
            case "virtual": kind = .virtual
            default: kind = (Int64(sqliteValue: row[4]) ?? 0) != 0 ? .withoutRowID : .table
            }
        }
        var uniqueIndexes: [TableInfo.UniqueIndex] = []
        if kind == .table || kind == .withoutRowID {
            // seq, name, unique, ...: any unique index (UNIQUE, a non-rowid
            // PRIMARY KEY) can make INSERT or UPDATE replace another row.
            // The stored columns, as the triggers see a new row's: what an index's expressions may read.
            let stored = columns.filter { !$0.isGenerated }.map { quoteIdentifier($0.name) }.joined(separator: ", ")
            for row in try rows("PRAGMA index_list(\(quoted))") where row.count >= 3 && (Int64(sqliteValue: row[2]) ?? 0) != 0 {
                guard case .text(let index) = row[1] else { continue }
                // seqno, cid, name, desc, coll, key: the key columns (cid -2 for an expression).
                let xinfo = try rows("PRAGMA index_xinfo(\(quoteIdentifier(index)))")
                // An expression's text is only in the index's SQL.
                var terms: [String]?
                if xinfo.contains(where: { $0.count >= 6 && Int64(sqliteValue: $0[1]) == -2 }) {
                    terms = try rows("SELECT sql FROM main.sqlite_schema WHERE type = 'index' AND name = ?", [.text(index)])
                        .first.flatMap { String(sqliteValue: $0[0]) }.flatMap(IndexTerms.split(createIndexSQL:))
                }
                let parts = xinfo.compactMap { part -> TableInfo.UniqueIndex.Part? in
                    guard part.count >= 6, (Int64(sqliteValue: part[5]) ?? 0) != 0 else { return nil }
                    let position = Int(Int64(sqliteValue: part[0]) ?? -1)
                    var expression: String?
                    if Int64(sqliteValue: part[1]) == -2, let terms, terms.indices.contains(position) {
                        // Kept only when it reads the table's stored columns
                        // alone, as the triggers evaluate it for a new row.
                        if (try? connection.prepare(sql: "SELECT (\(terms[position])) FROM (SELECT \(stored) FROM main.\(quoted)) LIMIT 0")) != nil {
                            expression = terms[position]
                        }
                    }
                    return TableInfo.UniqueIndex.Part(column: String(sqliteValue: part[2]), expression: expression,
                                                      collation: String(sqliteValue: part[4]) ?? "BINARY")
                }
                uniqueIndexes.append(TableInfo.UniqueIndex(name: index, parts: parts))
            }
        }
        let primaryKey = keyParts.isEmpty ? ["rowid"] : keyParts.sorted { $0.0 < $1.0 }.map(\.1)
        var collations: [String: String] = [:]
        for column in columns {
            if let collation = collation(table: name, column: column.name) { collations[column.name] = collation }
        }
        // id, seq, table, from, to, ...: one row per column of each key; single-column keys only.
        let keyRows = try rows("PRAGMA foreign_key_list(\(quoted))")
        var keys: [TableInfo.ForeignKey] = []
        for row in keyRows where row.count >= 5 {
            let id = row[0]
            guard keyRows.filter({ $0[0] == id }).count == 1, case .text(let parent) = row[2], case .text(let from) = row[3] else { continue }
            keys.append(TableInfo.ForeignKey(column: from, parentTable: parent, parentColumn: String(sqliteValue: row[4])))
        }
        return TableInfo(name: name, kind: kind, columns: columns, primaryKey: primaryKey,
                         uniqueIndexes: uniqueIndexes, collations: collations, foreignKeys: keys)
    }

    /// The collating sequence of a column, as SQLite reports it.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/c3ref/table_column_metadata.html>
    private func collation(table: String, column: String) -> String? {
        connection.collation(table: table, column: column)
    }
}

// A schema cache belongs to its connection's queue.
@available(*, unavailable)
extension SchemaCache: Sendable {}
