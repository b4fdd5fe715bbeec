import Foundation

/// A connection inside a transaction: what `store.write { tx in ... }` and
/// `store.read { db in ... }` hand to their closures.
///
/// Do not keep it past the closure: it belongs to the store's writer or
/// reader queue.
///
/// ```swift
/// let saved = try store.write { tx in
///     try tx.insert(Person(firstName: "Zoë", lastName: "Ng"))
/// }
/// let people = try store.read { db in
///     try db.fetchAll(Person.self, filter: Filter("age > $0", 30), orderBy: [Ordering("last_name")])
/// }
/// ```
public final class Database {
    @usableFromInline
    let connection: Connection
    /// Whether this connection refuses writes (a reader).
    public let isReadOnly: Bool
    /// What this connection knows of the schema.
    let schema: SchemaCache
    /// The owner of every hook: commits, rollbacks, captured row changes (writers only).
    private(set) var broker: HookBroker?
    // Database+Writing's statements per model type and schema generation.
    var writePlans: [WritePlanKey: WritePlan] = [:]
    var writePlansGeneration = 0
    private var savepointDepth = 0

    /// - Parameter capture: how a writer captures its row changes (nil: the
    ///   best the SQLite library offers); ignored for a reader.
    init(connection: Connection, isReadOnly: Bool, capture: ChangeCapture? = nil) {
        self.connection = connection
        self.isReadOnly = isReadOnly
        schema = SchemaCache(connection: connection)
        if !isReadOnly { broker = HookBroker(db: self, capture: capture) }
        connection.statementDidFinish = { [unowned self] notes, succeeded in
            if notes.changesSchema { schema.invalidate() }
            broker?.statementDidFinish(notes: notes, succeeded: succeeded)
        }
    }

    deinit {
        broker?.uninstall()
        connection.statementDidFinish = nil
    }

    /// The connection's prepared statement for `sql`, prepared once and
    /// reused (reset it after use): how the layers above read rows.
    func cachedStatement(sql: String) throws -> Statement {
        try connection.cachedStatement(sql: sql)
    }

    // MARK: - Raw SQL

    /// Runs one SQL statement with positional arguments (`?`), discarding any rows.
    ///
    /// - Throws: `StoreError` with SQLite's code, message and the SQL.
    ///
    /// - Parameters:
    ///   - sql: one SQL statement; `?` marks a positional argument.
    ///   - arguments: the values of the `?`s, in order.
    public func execute(sql: String, arguments: [SQLiteValue] = []) throws {
        try connection.execute(sql: sql, arguments: arguments)
    }

    /// Runs a script of several SQL statements, without arguments.
    ///
    /// - Parameter sql: SQL statements separated by semicolons.
    /// - Throws: `StoreError` with SQLite's code and message, for the first
    ///   statement that fails (those before it ran).
    public func execute(script sql: String) throws {
        try connection.execute(script: sql)
    }

    /// Fetches every row of an SQL query.
    ///
    /// - Parameters:
    ///   - sql: one SELECT (or any statement that returns rows).
    ///   - arguments: the values of its `?`s, in order.
    /// - Returns: every row, in the query's order.
    /// - Throws: `StoreError` when the SQL is invalid or a read fails.
    /// - Complexity: the query's own cost; each row is read once.
    public func fetchRows(sql: String, arguments: [SQLiteValue] = []) throws -> [Row] {
        let statement = try connection.cachedStatement(sql: sql)
        defer { statement.reset() }
        try statement.bind(arguments)
        var rows: [Row] = []
        while try statement.step() {
            rows.append(statement.row())
        }
        return rows
    }

    /// Fetches models with an SQL query whose columns match the model's keys.
    ///
    /// Inlinable, so the loop is specialized for the model in the app's module
    /// (unspecialized, each row cost generic metadata lookups and value-witness copies).
    ///
    /// - Parameters:
    ///   - type: the model type; the query's column names match its keys.
    ///   - sql: one SELECT.
    ///   - arguments: the values of its `?`s, in order.
    /// - Returns: the models, in the query's order.
    /// - Throws: `StoreError` when the SQL is invalid, a read fails, or a row
    ///   cannot be decoded (the column and the value are named).
    /// - Complexity: the query's own cost, plus one decode per row.
    @inlinable
    public func fetchAll<M: Model>(_ type: M.Type, sql: String, arguments: [SQLiteValue] = []) throws -> [M] {
        let statement = try connection.cachedStatement(sql: sql)
        defer { statement.reset() }
        try statement.bind(arguments)
        let decoder = StatementDecoder(statement: statement, tableName: M.tableName)
        var models: [M] = []
        while try statement.step() {
            models.append(try decoder.decode(M.self))
        }
        return models
    }

    /// The rowid of the last inserted row on this connection.
    public var lastInsertedRowID: Int64 { connection.lastInsertRowID }

    /// The number of rows the last INSERT, UPDATE or DELETE changed.
    public var changesCount: Int { connection.changes }

    // MARK: - Schema

    /// The names of the app's tables, sorted (SQLite's and Sluice's own tables left out).
    ///
    /// - Returns: the table names, in ascending order.
    /// - Throws: `StoreError` when the schema cannot be read.
    ///
    /// - Complexity: O(1) while the schema is unchanged (the connection's schema cache).
    public func tableNames() throws -> [String] {
        try schema.tableNames()
    }

    /// Whether a table named `name` exists, in any case (SQLite names are
    /// ASCII case-insensitive; Sluice's own `sluice_*` tables included).
    /// Answered from the connection's schema cache, which looks again when
    /// the schema changes, whoever changes it.
    ///
    /// - Parameter name: the table's name, in any case.
    /// - Returns: whether the table exists.
    /// - Throws: `StoreError` when the schema cannot be read.
    /// - Complexity: O(1) while the schema is unchanged; one scan of
    ///   `sqlite_schema` after a change.
    public func tableExists(_ name: String) throws -> Bool {
        // Outside a transaction, another connection may have changed the
        // schema since the last statement.
        if !isInsideTransaction { schema.refreshIfChanged() }
        return try schema.hasTable(name)
    }

    /// A table's columns and primary key. Sluice's own `sluice_*` tables
    /// can be read too, though `tableNames()` leaves them out.
    ///
    /// - Throws: `StoreError.Code.unknownTable`, listing the tables there are.
    ///
    /// - Parameter table: the table's name, in any case.
    /// - Returns: its columns, primary key, unique indexes, collations and foreign keys.
    ///
    /// - Complexity: O(1) while the schema is unchanged (the connection's schema cache).
    public func tableInfo(_ table: String) throws -> TableInfo {
        try schema.tableInfo(table)
    }

    /// The schema as filters' relationship paths read it.
    var schemaLookup: SchemaLookup {
        SchemaLookup(table: { try self.tableInfo($0) }, tableNames: { try self.tableNames() },
                     fullTextColumns: { try self.fullTextIndexColumns(of: $0) },
                     fullTextProblem: { index, column, query in
                         // FTS5 parses the query when the statement first steps.
                         let sql = "SELECT 1 FROM \(quoteIdentifier(index)) WHERE \(quoteIdentifier(column ?? index)) MATCH ? LIMIT 1"
                         do {
                             _ = try self.fetchRows(sql: sql, arguments: [.text(query)])
                             return nil
                         } catch let error as StoreError {
                             return error.message
                         } catch {
                             return "\(error)"
                         }
                     })
    }

    /// Drops cached schema knowledge when another connection changed the
    /// schema. Called at the start of each transaction; this connection's
    /// own schema changes drop it as they run.
    func refreshSchemaIfChanged() {
        schema.refreshIfChanged()
    }

    // MARK: - Transactions

    /// Runs `body` in a savepoint: its changes are kept when it returns and
    /// undone when it throws, while the enclosing transaction goes on.
    ///
    /// Related SQLite documentation: <https://www.sqlite.org/lang_savepoint.html>
    ///
    /// - Parameter body: the work to do; its result is returned.
    /// - Returns: what `body` returned.
    /// - Throws: what `body` threw (after the savepoint is rolled back), or a
    ///   `StoreError` when the savepoint cannot be opened or released.
    public func savepoint<T>(_ body: (Database) throws -> T) throws -> T {
        savepointDepth += 1
        let name = "sluice_savepoint_\(savepointDepth)"
        defer { savepointDepth -= 1 }
        // The hook broker sees these statements as any others (raw SQL too).
        try connection.execute(script: "SAVEPOINT \(name)")
        do {
            let result = try body(self)
            try connection.execute(script: "RELEASE SAVEPOINT \(name)")
            return result
        } catch {
            try? connection.execute(script: "ROLLBACK TO SAVEPOINT \(name); RELEASE SAVEPOINT \(name)")
            throw error
        }
    }

    /// Whether a transaction is open on this connection: false once SQLite has rolled
    /// one back by itself (a constraint declared `ON CONFLICT ROLLBACK`, a full disk).
    public var isInsideTransaction: Bool { connection.isInTransaction }

    func begin(immediate: Bool) throws {
        if !isReadOnly { try checkFileInPlace() }
        broker?.willBegin()
        try connection.execute(script: immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED")
    }

    /// Commits, after letting transaction observers write their last
    /// (the change log); the transaction stays open when that fails, or
    /// when the file was replaced meanwhile.
    func commit() throws {
        try checkFileInPlace()
        try broker?.willCommitTransaction(self)
        try runCommitActions()
        try connection.execute(script: "COMMIT")
        transactionAuthor = nil
    }

    func rollback() {
        transactionAuthor = nil
        commitActions = []
        if connection.isInTransaction {
            try? connection.execute(script: "ROLLBACK")
        }
    }

    /// Runs `body` in its own immediate transaction on this (writing)
    /// connection, recorded in the change log as written by `author`:
    /// committed when it returns, rolled back when it throws (the error is
    /// rethrown). The one way Sluice opens a write transaction: `Store.write`,
    /// migrations and the change log's set-up all come through here.
    func inTransaction<T>(author: String? = nil, _ body: () throws -> T) throws -> T {
        try begin(immediate: true)
        transactionAuthor = author
        refreshSchemaIfChanged()
        do {
            try broker?.didBeginTransaction(self)
            let result = try body()
            try commit()
            return result
        } catch {
            rollback()
            // A schema change the rollback undid.
            refreshSchemaIfChanged()
            throw error
        }
    }

    /// Who makes this write transaction, recorded with it in the change log
    /// (like Core Data's `transactionAuthor`): `"app"`, `"widget"`,
    /// `"sync"`, `"cli"`... Starts as the store's `Configuration.author`.
    ///
    /// ```swift
    /// try store.write { tx in
    ///     tx.transactionAuthor = "import"
    ///     try tx.insert(person)
    /// }
    /// ```
    public var transactionAuthor: String?

    /// What runs at this transaction's commit, after the transaction
    /// observers wrote their last (the change log) and before COMMIT
    /// (``whenLogged(_:)`` adds to it); dropped by a rollback.
    var commitActions: [() throws -> Void] = []

    private func runCommitActions() throws {
        guard !commitActions.isEmpty else { return }
        let actions = commitActions
        commitActions = []
        for action in actions { try action() }
    }

    // MARK: - Queries

    /// Rows of a table, filtered, ordered (ties broken by primary key) and limited.
    ///
    /// - Parameters:
    ///   - table: the table's name.
    ///   - filter: which rows; all of them when nil.
    ///   - orderBy: the order; the primary key breaks ties (and orders when empty).
    ///   - limit: at most this many rows; all when nil.
    /// - Returns: the rows, in order.
    /// - Throws: `StoreError` naming an unknown table or column, or a failed read.
    /// - Complexity: one SQL query; SQLite's cost for the filter and order
    ///   (an index helps both).
    public func fetchRows(table: String, filter: Filter? = nil, orderBy: [Ordering] = [], limit: Int? = nil) throws -> [Row] {
        let (sql, arguments) = try selectSQL(table: table, filter: filter, orderBy: orderBy, limit: limit)
        return try fetchRows(sql: sql, arguments: arguments)
    }

    /// Models of a type, filtered, ordered (ties broken by primary key) and limited.
    ///
    /// - Complexity: one SQL query; decoding reads columns directly.
    ///
    /// - Parameters:
    ///   - type: the model type.
    ///   - filter: which rows; all of them when nil.
    ///   - orderBy: the order; the primary key breaks ties (and orders when empty).
    ///   - limit: at most this many rows; all when nil.
    /// - Returns: the models, in order.
    /// - Throws: `StoreError` naming an unknown column, a failed read or a row
    ///   that cannot be decoded.
    @inlinable
    public func fetchAll<M: Model>(_ type: M.Type, filter: Filter? = nil, orderBy: [Ordering] = [], limit: Int? = nil) throws -> [M] {
        let (sql, arguments) = try selectSQL(table: M.tableName, filter: filter, orderBy: orderBy, limit: limit)
        return try fetchAll(M.self, sql: sql, arguments: arguments)
    }

    /// The SELECT of `fetchRows(table:...)`, and its arguments.
    @usableFromInline
    func selectSQL(table: String, filter: Filter?, orderBy: [Ordering], limit: Int?) throws -> (String, [SQLiteValue]) {
        var select = SelectBuilder(table: try tableInfo(table), schema: schemaLookup)
        (select.filter, select.orderBy, select.limit) = (filter, orderBy, limit)
        return try select.build()
    }

    /// The model with this primary key, or nil.
    ///
    /// - Parameters:
    ///   - type: the model type.
    ///   - id: the primary key.
    /// - Returns: the model, or nil when no row has this key.
    /// - Throws: `StoreError` when the read fails or the row cannot be decoded.
    /// - Complexity: one lookup by primary key: O(log n).
    public func fetchOne<M: Model>(_ type: M.Type, id: M.ID) throws -> M? {
        let info = try tableInfo(M.tableName)
        var select = SelectBuilder(table: info)
        select.keyColumn = try primaryKeyColumn(of: M.self, in: info)
        return try fetchAll(M.self, sql: try select.build().sql, arguments: [id.sqliteValue]).first
    }

    /// The number of rows of a model's table that match a filter.
    ///
    /// - Parameters:
    ///   - type: the model type.
    ///   - filter: which rows; all of them when nil.
    /// - Returns: how many rows match.
    /// - Throws: `StoreError` naming an unknown column, or a failed read.
    /// - Complexity: one `count(*)` query: O(n) rows scanned, fewer with an index on the filter.
    public func fetchCount<M: Model>(_ type: M.Type, filter: Filter? = nil) throws -> Int {
        try fetchCount(table: M.tableName, filter: filter)
    }

    /// The number of rows of a table that match a filter.
    ///
    /// - Parameters:
    ///   - table: the table's name.
    ///   - filter: which rows; all of them when nil.
    /// - Returns: how many rows match.
    /// - Throws: `StoreError` naming an unknown table or column, or a failed read.
    /// - Complexity: one `count(*)` query: O(n) rows scanned, fewer with an index on the filter.
    public func fetchCount(table: String, filter: Filter? = nil) throws -> Int {
        var select = SelectBuilder(table: try tableInfo(table), schema: schemaLookup)
        select.filter = filter
        return try fetchCount(select)
    }

    /// The number of rows a SELECT would return, counted by SQLite (`count(*)`).
    func fetchCount(_ select: SelectBuilder) throws -> Int {
        var count = select
        count.columns = .count
        let (sql, arguments) = try count.build()
        let rows = try fetchRows(sql: sql, arguments: arguments)
        return rows.first.flatMap { Int(sqliteValue: $0[0]) } ?? 0
    }

    /// The primary-key column of a model's table, as the schema spells it.
    func primaryKeyColumn<M: Model>(of type: M.Type, in info: TableInfo) throws -> String {
        guard let column = info.column(named: M.primaryKeyColumn) else {
            throw StoreError(code: .unknownColumn, message: "\(M.self).primaryKeyColumn '\(M.primaryKeyColumn)' is not a column of table \(info.name) (columns: \(info.columnNames.joined(separator: ", ")))")
        }
        return column.name
    }
}

// A Database belongs to its store's writer or reader queue.
@available(*, unavailable)
extension Database: Sendable {}
