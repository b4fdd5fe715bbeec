import CSQLite
import Foundation

/// The one error type of Sluice: an SQLite failure, or a problem Sluice found
/// in a query, a model, a migration or input data.
///
/// Its description reads like GRDB's `DatabaseError`:
/// `SQLite error 19: NOT NULL constraint failed: person.first_name - while executing `INSERT ...``.
/// Bound values never appear in it.
///
/// ```swift
/// do {
///     try store.write { tx in try tx.insert(person) }
/// } catch let error as StoreError where error.code == .constraint {
///     print(error.message)
/// }
/// ```
public struct StoreError: Error, Sendable, Equatable {
    /// What kind of failure this is. SQLite result codes keep their numbers;
    /// Sluice's own kinds start at 1000.
    public struct Code: RawRepresentable, Hashable, Sendable {
        /// The numeric code.
        public let rawValue: Int32
        /// Creates a code from its number.
        ///
        /// - Parameter rawValue: the code's number (SQLite's primary result code, or Sluice's own).
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// Matches a caught error against a code: `catch StoreError.Code.busy`.
        ///
        /// - Parameters:
        ///   - pattern: the code.
        ///   - error: the error caught.
        /// - Returns: whether it is a `StoreError` with this code.
        public static func ~= (pattern: Code, error: any Error) -> Bool {
            (error as? StoreError)?.code == pattern
        }

        // MARK: - SQLite primary result codes

        /// SQLITE_ERROR: generic error, including SQL syntax errors.
        public static let error = Code(rawValue: SQLITE_ERROR)
        /// SQLITE_INTERNAL.
        public static let `internal` = Code(rawValue: SQLITE_INTERNAL)
        /// SQLITE_PERM: access permission denied.
        public static let permission = Code(rawValue: SQLITE_PERM)
        /// SQLITE_ABORT: an operation was aborted.
        public static let abort = Code(rawValue: SQLITE_ABORT)
        /// SQLITE_BUSY: the database file is locked by another connection.
        public static let busy = Code(rawValue: SQLITE_BUSY)
        /// SQLITE_LOCKED: a table is locked.
        public static let locked = Code(rawValue: SQLITE_LOCKED)
        /// SQLITE_NOMEM.
        public static let noMemory = Code(rawValue: SQLITE_NOMEM)
        /// SQLITE_READONLY: attempt to write a read-only database.
        public static let readOnly = Code(rawValue: SQLITE_READONLY)
        /// SQLITE_INTERRUPT.
        public static let interrupt = Code(rawValue: SQLITE_INTERRUPT)
        /// SQLITE_IOERR: disk I/O error.
        public static let ioError = Code(rawValue: SQLITE_IOERR)
        /// SQLITE_CORRUPT: the database disk image is malformed.
        public static let corrupt = Code(rawValue: SQLITE_CORRUPT)
        /// SQLITE_FULL: the disk is full.
        public static let full = Code(rawValue: SQLITE_FULL)
        /// SQLITE_CANTOPEN: unable to open the database file.
        public static let cannotOpen = Code(rawValue: SQLITE_CANTOPEN)
        /// SQLITE_SCHEMA: the schema changed.
        public static let schema = Code(rawValue: SQLITE_SCHEMA)
        /// SQLITE_TOOBIG: string or blob too big.
        public static let tooBig = Code(rawValue: SQLITE_TOOBIG)
        /// SQLITE_CONSTRAINT: a constraint (NOT NULL, UNIQUE, FOREIGN KEY, CHECK) failed.
        public static let constraint = Code(rawValue: SQLITE_CONSTRAINT)
        /// SQLITE_MISMATCH: data type mismatch.
        public static let mismatch = Code(rawValue: SQLITE_MISMATCH)
        /// SQLITE_MISUSE: library used incorrectly.
        public static let misuse = Code(rawValue: SQLITE_MISUSE)
        /// SQLITE_RANGE: bind index out of range.
        public static let range = Code(rawValue: SQLITE_RANGE)
        /// SQLITE_NOTADB: the file is not a database.
        public static let notADatabase = Code(rawValue: SQLITE_NOTADB)

        // MARK: - Sluice's own codes

        /// A query string or a typed filter is malformed.
        public static let invalidQuery = Code(rawValue: 1000)
        /// A table name is not in the database's schema.
        public static let unknownTable = Code(rawValue: 1001)
        /// A column name is not in its table.
        public static let unknownColumn = Code(rawValue: 1002)
        /// A value does not fit its column or its Swift property.
        public static let typeMismatch = Code(rawValue: 1003)
        /// A stored row could not be decoded into a model.
        public static let decoding = Code(rawValue: 1004)
        /// An update or delete named a row that does not exist.
        public static let notFound = Code(rawValue: 1005)
        /// A migration failed, was changed after being applied, or is missing.
        public static let migration = Code(rawValue: 1006)
        /// The database was migrated by newer code than this.
        public static let databaseTooNew = Code(rawValue: 1007)
        /// Input data (a seed file, an argument) is malformed.
        public static let invalidInput = Code(rawValue: 1008)
        /// The store was used in a way its API does not allow.
        public static let invalidUse = Code(rawValue: 1009)
        /// The table cannot be observed (a `WITHOUT ROWID` table, a view, a virtual table).
        public static let unsupportedTable = Code(rawValue: 1010)
        /// A history token older than what the change log's retention kept.
        public static let historyExpired = Code(rawValue: 1011)
        /// A revert would overwrite a later change to the same values.
        public static let conflict = Code(rawValue: 1012)
        /// The database file was replaced (renamed over, or deleted and
        /// made again) while the store had it open: writes are refused, and
        /// observations end with this error. Open a new store on the path.
        public static let fileReplaced = Code(rawValue: 1013)
    }

    /// What kind of failure this is.
    public var code: Code
    /// SQLite's extended result code, when SQLite reported the error.
    public var extendedCode: Int32?
    /// What went wrong, naming the table, column, row or position at fault.
    public var message: String
    /// The SQL that was running, if any.
    public var sql: String?

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: what kind of error.
    ///   - extendedCode: SQLite's extended result code, when it came from SQLite.
    ///   - message: what went wrong, and where.
    ///   - sql: the SQL that failed, if any.
    public init(code: Code, extendedCode: Int32? = nil, message: String, sql: String? = nil) {
        self.code = code
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
    }

    /// The error SQLite reports for `code` on connection `db`, read where it was returned.
    init(sqliteCode: Int32, db: OpaquePointer?, sql: String? = nil) {
        let primary = sqliteCode & 0xFF
        var message = String(cString: sqlite3_errstr(sqliteCode))
        var extended: Int32 = sqliteCode
        if let db {
            extended = sqlite3_extended_errcode(db)
            if let text = sqlite3_errmsg(db) { message = String(cString: text) }
        }
        self.init(code: Code(rawValue: primary), extendedCode: extended, message: message, sql: sql)
    }

    /// Whether SQLite reported this error (as opposed to Sluice itself).
    public var isSQLiteError: Bool { code.rawValue < 1000 }
}

extension StoreError: CustomStringConvertible {
    /// `SQLite error 19: <message> - while executing `<sql>``, or `<kind>: <message>` for Sluice's own errors.
    public var description: String {
        var text: String
        if isSQLiteError {
            text = "SQLite error \(code.rawValue): \(message)"
        } else {
            text = message
        }
        if let sql { text += " - while executing `\(sql)`" }
        return text
    }
}

extension StoreError: LocalizedError {
    /// The same text as `description`, so `localizedDescription` shows it.
    public var errorDescription: String? { description }
}

extension StoreError.Code: CustomStringConvertible {
    /// The code's name and number: `notFound (1005)`, `constraint (19)`.
    public var description: String {
        Self.names[self].map { "\($0) (\(rawValue))" } ?? "code \(rawValue)"
    }

    private static let names: [StoreError.Code: String] = [
            .error: "error",
            .`internal`: "internal",
            .permission: "permission",
            .abort: "abort",
            .busy: "busy",
            .locked: "locked",
            .noMemory: "noMemory",
            .readOnly: "readOnly",
            .interrupt: "interrupt",
            .ioError: "ioError",
            .corrupt: "corrupt",
            .full: "full",
            .cannotOpen: "cannotOpen",
            .schema: "schema",
            .tooBig: "tooBig",
            .constraint: "constraint",
            .mismatch: "mismatch",
            .misuse: "misuse",
            .range: "range",
            .notADatabase: "notADatabase",
            .invalidQuery: "invalidQuery",
            .unknownTable: "unknownTable",
            .unknownColumn: "unknownColumn",
            .typeMismatch: "typeMismatch",
            .decoding: "decoding",
            .notFound: "notFound",
            .migration: "migration",
            .databaseTooNew: "databaseTooNew",
            .invalidInput: "invalidInput",
            .invalidUse: "invalidUse",
            .unsupportedTable: "unsupportedTable",
            .historyExpired: "historyExpired",
            .conflict: "conflict",
            .fileReplaced: "fileReplaced",
    ]
}
