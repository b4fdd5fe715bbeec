import Foundation

/// A point in a store's change history: "everything up to this committed
/// transaction". Persist it (it is `Codable`, and its string form is
/// stable) and ask for what came after with `Store.changes(since:)`, across
/// restarts and processes, as Core Data's persistent history tokens.
///
/// A token names its database, so a token of another file is refused
/// rather than misread.
public struct HistoryToken: Sendable, Hashable, Comparable, Codable, LosslessStringConvertible {
    /// The database's id (random, made with its change log).
    public let databaseID: String
    /// The sequence number of the last transaction this token includes (0: none).
    public let sequence: Int64

    /// The token of transaction `sequence` of the database `databaseID` (a consumer that
    /// keeps its own position, such as a sync client, rebuilds tokens from it).
    ///
    /// - Parameters:
    ///   - databaseID: the database's id (the part before the dash of a token).
    ///   - sequence: the transaction's sequence number in that database's log.
    public init(databaseID: String, sequence: Int64) {
        self.databaseID = databaseID
        self.sequence = sequence
    }

    /// Reads the string form, `<database id>-<sequence>`; nil when malformed.
    ///
    /// - Parameter description: a token's string form.
    public init?(_ description: String) {
        guard let dash = description.lastIndex(of: "-") else { return nil }
        let id = description[..<dash]
        guard !id.isEmpty, id.allSatisfy(\.isHexDigit), let sequence = Int64(description[description.index(after: dash)...]), sequence >= 0 else { return nil }
        self.init(databaseID: String(id), sequence: sequence)
    }

    /// The string form: `<database id>-<sequence>`.
    public var description: String { "\(databaseID)-\(sequence)" }

    /// Orders tokens of one database by sequence.
    public static func < (lhs: HistoryToken, rhs: HistoryToken) -> Bool {
        (lhs.databaseID, lhs.sequence) < (rhs.databaseID, rhs.sequence)
    }

    /// Decodes the string form.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let token = HistoryToken(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a history token: '\(text)'"))
        }
        self = token
    }

    /// Encodes the string form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// One committed transaction from the change log.
public struct LoggedTransaction: Sendable, Hashable, Identifiable {
    /// The token of the history up to and including this transaction.
    public let token: HistoryToken
    /// When it was written (the time of its first change, to the millisecond).
    public let date: Date
    /// Who wrote it (`Database.transactionAuthor`), if anyone said.
    public let author: String?
    /// What it changed, in the order the changes happened.
    public let changes: [RowChange]

    /// The transaction's token.
    public var id: HistoryToken { token }
}

/// One row changed by a logged transaction, with its values.
public struct RowChange: Sendable, Hashable {
    /// What happened to the row.
    public enum Operation: String, Sendable, Hashable, Codable {
        case insert, update, delete
    }

    /// The table, as named in the schema.
    public let table: String
    /// What happened.
    public let operation: Operation
    /// The primary key (after the change; before it for a delete). A
    /// composite key is its JSON array, as text.
    public let key: SQLiteValue
    /// The rowid after the change (before it, for a delete).
    public let rowID: Int64
    /// For an update that changed the rowid: the rowid before.
    public let oldRowID: Int64?
    /// Values before: every column for a delete, the changed columns for an update, nil for an insert.
    public let old: Row?
    /// Values after: every column for an insert, the changed columns for an update, nil for a delete.
    public let new: Row?

    /// The columns an update changed (every column for an insert or delete).
    public var changedColumns: [String] { (new ?? old)?.columns ?? [] }

    /// A column's value before the change, typed (nil when the column did not change or was NULL).
    ///
    /// - Throws: `.typeMismatch` when the value is not a `T`.
    ///
    /// - Parameters:
    ///   - column: the column's name.
    ///   - type: the type to read the value as.
    /// - Returns: the value before the change, or nil.
    ///
    /// - Complexity: O(c) for c columns in the change.
    public func oldValue<T: SQLiteValueConvertible>(_ column: String, as type: T.Type = T.self) throws -> T? {
        try Self.value(column, in: old)
    }

    /// A column's value after the change, typed (nil when the column did not change or is NULL).
    ///
    /// - Throws: `.typeMismatch` when the value is not a `T`.
    ///
    /// - Parameters:
    ///   - column: the column's name.
    ///   - type: the type to read the value as.
    /// - Returns: the value after the change, or nil.
    ///
    /// - Complexity: O(c) for c columns in the change.
    public func newValue<T: SQLiteValueConvertible>(_ column: String, as type: T.Type = T.self) throws -> T? {
        try Self.value(column, in: new)
    }

    private static func value<T: SQLiteValueConvertible>(_ column: String, in row: Row?) throws -> T? {
        guard let value = row?[column] else { return nil }
        return try PropertyChange.typed(value, column)
    }
}

extension ChangeLog {
    /// The token of everything committed on `db`'s snapshot.
    static func currentToken(_ db: Database) throws -> HistoryToken {
        guard try exists(db) else {
            throw StoreError(code: .notFound, message: "\(db.connection.path) has no change log (it was opened with logsChanges off, or never by a Sluice writer)")
        }
        // The log's tables are there: a read that fails now says what is damaged.
        let id = try readingLog(db, table: "sluice_log_state") { try databaseID(db) }
        let sequence = try readingLog(db, table: "sluice_transaction") { try db.connection.scalarInt(sql: "SELECT max(seq) FROM sluice_transaction") }
        _ = try readingLog(db, table: "sluice_change") { try db.connection.scalarInt(sql: "SELECT max(id) FROM sluice_change") }
        guard let id else {
            throw StoreError(code: .corrupt, message: "the change log of \(db.connection.path) is damaged: sluice_log_state has no database_id")
        }
        return HistoryToken(databaseID: id, sequence: sequence ?? 0)
    }

    /// Runs a read of one of the log's tables; an error names the file and the table.
    static func readingLog<T>(_ db: Database, table: String, _ read: () throws -> T) throws -> T {
        do {
            return try read()
        } catch var error as StoreError {
            error.message = "the change log of \(db.connection.path) cannot be read (table \(table)): \(error.message)"
                + (error.code == .corrupt || error.code == .notADatabase ? "; the file is damaged (PRAGMA integrity_check says where)" : "")
            throw error
        }
    }

    /// Checks that `token` belongs to this database and that the log still
    /// holds everything after it.
    static func check(_ token: HistoryToken, _ db: Database) throws {
        let current = try currentToken(db)
        guard token.databaseID == current.databaseID else {
            throw StoreError(code: .invalidInput, message: "history token \(token) belongs to another database (id \(token.databaseID)); this one is \(current.databaseID)")
        }
        guard token.sequence <= current.sequence else {
            throw StoreError(code: .invalidInput, message: "history token \(token) is ahead of this database's history, which ends at \(current)")
        }
        let pruned = position(db)?.prunedThrough ?? 0
        guard token.sequence >= pruned else {
            throw StoreError(code: .historyExpired, message: "history token \(token) has expired: retention removed the history through transaction \(pruned); read everything again and continue from \(current)")
        }
    }

    /// The transactions after `token` on `db`'s snapshot, oldest first, at
    /// most `limit`, optionally only their changes to some tables (lower-cased;
    /// transactions left with no change are skipped).
    ///
    /// A foreign writer's newest logged transaction may still grow (its next
    /// statement or commit joins it until it is sealed): inside a
    /// write transaction it is sealed first; on a read connection it is left
    /// out until a writer seals it (`Store.changes(since:)` does) or a later
    /// transaction follows it. So a transaction read is never added to later.
    /// `includingOpen` reads that one too, for a count or a look that moves
    /// no cursor past it.
    static func transactions(after token: HistoryToken, tables: Set<String>? = nil, limit: Int? = nil, includingOpen: Bool = false,
                             _ db: Database) throws -> [LoggedTransaction] {
        try check(token, db)
        var end = Int64.max
        if !db.isReadOnly, db.isInsideTransaction {
            try sealForeignTransaction(db)
        } else if !includingOpen, let open = try openForeignTransaction(db) {
            end = open
        }
        var sql = "SELECT seq, at, author FROM sluice_transaction WHERE seq > ? AND seq < ? ORDER BY seq"
        if let limit { sql += " LIMIT \(max(0, limit))" }
        let headers = try readingLog(db, table: "sluice_transaction") {
            try db.fetchRows(sql: sql, arguments: [.integer(token.sequence), .integer(end)])
        }
        guard let first = headers.first, let last = headers.last else { return [] }
        return try readingLog(db, table: "sluice_change, transactions \(first[0]) to \(last[0])") {
            try read(headers, first: first, last: last, token: token, tables: tables, db)
        }
    }

    /// The changes of the transactions `headers` (`first` to `last`), as logged transactions.
    private static func read(_ headers: [Row], first: Row, last: Row, token: HistoryToken,
                             tables: Set<String>?, _ db: Database) throws -> [LoggedTransaction] {
        let statement = try db.cachedStatement(sql: """
            SELECT seq, tbl, op, row_id, old_row_id, key, old, new FROM sluice_change WHERE \(ChangeLog.changesInRange) ORDER BY id
            """)
        defer { statement.reset() }
        guard case .integer(let firstSequence) = first[0] else { return [] }
        try statement.bind([.integer(firstSequence - 1), last[0]])
        var changes: [Int64: [RowChange]] = [:]
        while try statement.step() {
            guard case .integer(let seq) = statement.value(at: 0), case .text(let table) = statement.value(at: 1) else { continue }
            if let tables, !tables.contains(table.lowercased()) { continue }
            guard case .text(let op) = statement.value(at: 2), let operation = RowChange.Operation(rawValue: op) else {
                throw StoreError(code: .corrupt, message: "change log transaction \(seq) has an unknown operation \(statement.value(at: 2))")
            }
            func row(_ column: Int32) throws -> Row? {
                guard case .text(let json) = statement.value(at: column) else { return nil }
                let pairs = try LogValues.decode(json)
                return Row(columns: pairs.map(\.name), values: pairs.map(\.value))
            }
            changes[seq, default: []].append(RowChange(
                table: table, operation: operation, key: statement.value(at: 5),
                rowID: Int64(sqliteValue: statement.value(at: 3)) ?? 0,
                oldRowID: Int64(sqliteValue: statement.value(at: 4)),
                old: try row(6), new: try row(7)))
        }
        return headers.compactMap { header in
            guard case .integer(let seq) = header[0] else { return nil }
            let rows = changes[seq] ?? []
            if tables != nil, rows.isEmpty { return nil }
            let milliseconds = Int64(sqliteValue: header[1]) ?? 0
            return LoggedTransaction(token: HistoryToken(databaseID: token.databaseID, sequence: seq),
                                     date: Date(timeIntervalSince1970: Double(milliseconds) / 1000),
                                     author: String(sqliteValue: header[2]), changes: rows)
        }
    }
}
