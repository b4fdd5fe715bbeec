import CSQLite
import Foundation

/// A raw SQLite prepared-statement handle.
typealias SQLiteStatement = OpaquePointer

/// A prepared statement: bind, step, read columns, reset.
@usableFromInline
final class Statement {
    let handle: SQLiteStatement
    let sql: String
    unowned let connection: Connection
    /// What the authorizer noticed while preparing it.
    let notes: StatementNotes
    /// What a higher layer keeps with the statement for as long as it is
    /// cached (the row decoder of `Records/`: making one builds a column map).
    var attachment: AnyObject?

    /// Column names, read once.
    private(set) lazy var columnNames: [String] = (0..<columnCount).map {
        String(cString: sqlite3_column_name(handle, Int32($0)))
    }

    init(connection: Connection, sql: String) throws {
        self.connection = connection
        self.sql = sql
        var statement: SQLiteStatement?
        let outer = connection.beginNotes()
        // The tail points into the C string, which lives only inside withCString
        // (a temporary copy for a small string such as `SAVEPOINT sp1`): read it there.
        var hasMoreSQL = false
        let code = sql.withCString { start -> Int32 in
            var tail: UnsafePointer<CChar>?
            let code = sqlite3_prepare_v3(connection.handle, start, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, &tail)
            if let tail, tail.pointee != 0 { hasMoreSQL = !String(cString: tail).allSatisfy { $0.isWhitespace || $0 == ";" } }
            return code
        }
        notes = connection.endNotes(restoring: outer)
        guard code == SQLITE_OK, let statement else {
            throw StoreError(sqliteCode: code, db: connection.handle, sql: sql)
        }
        if hasMoreSQL {
            sqlite3_finalize(statement)
            throw StoreError(code: .invalidUse, message: "only one SQL statement can run at a time", sql: sql)
        }
        handle = statement
    }

    deinit {
        sqlite3_finalize(handle)
    }

    var columnCount: Int { Int(sqlite3_column_count(handle)) }
    var parameterCount: Int { Int(sqlite3_bind_parameter_count(handle)) }

    // MARK: - Binding

    /// Binds positional arguments, checking their count.
    @usableFromInline
    func bind(_ arguments: [SQLiteValue]) throws {
        guard arguments.count == parameterCount else {
            throw StoreError(
                code: .range,
                message: "wrong number of arguments: the statement takes \(parameterCount), \(arguments.count) given",
                sql: sql)
        }
        for (offset, value) in arguments.enumerated() {
            try bind(value, at: Int32(offset + 1))
        }
    }

    /// Binds one value at a 1-based parameter index.
    func bind(_ value: SQLiteValue, at index: Int32) throws {
        try check(StatementHandle.bind(value, to: handle, at: index))
    }

    /// Binds UTF-8 bytes as text (copied by SQLite), without making a `String`.
    func bindText(utf8 bytes: [UInt8], at index: Int32) throws {
        try check(bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                guard let base = $0.baseAddress else { return sqlite3_bind_text(handle, index, "", 0, nil) }
                return sqlite3_bind_text(handle, index, base, Int32($0.count), _sluice_transient())
            }
        })
    }

    func check(_ code: Int32) throws {
        guard code == SQLITE_OK else {
            throw StoreError(sqliteCode: code, db: connection.handle, sql: sql)
        }
    }

    // MARK: - Stepping

    /// Steps once: true when a row is available, false when done.
    @usableFromInline
    func step() throws -> Bool {
        if sqlite3_stmt_busy(handle) == 0 { connection.willRun(notes) }
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE:
            connection.finished(notes, succeeded: true)
            return false
        default:
            let error = StoreError(sqliteCode: code, db: connection.handle, sql: sql)
            sqlite3_reset(handle)
            connection.finished(notes, succeeded: false)
            throw error
        }
    }

    /// Resets the statement and clears its bindings, ready for reuse.
    @usableFromInline
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    // MARK: - Columns

    /// The value of a 0-based column of the current row.
    func value(at index: Int32) -> SQLiteValue {
        StatementHandle.value(of: handle, at: index)
    }

    /// A 0-based column of the current row as an integer (a rowid).
    @inline(__always)
    func int64(at index: Int32) -> Int64 {
        StatementHandle.int64(of: handle, at: index)
    }

    /// A 0-based column of the current row as a real.
    @inline(__always)
    func double(at index: Int32) -> Double {
        StatementHandle.double(of: handle, at: index)
    }

    /// The storage class of a 0-based column's value in the current row.
    @inline(__always)
    func storageClass(at index: Int32) -> StorageClass {
        StatementHandle.storageClass(of: handle, at: index)
    }

    /// A column's text as UTF-8 bytes, valid until the row changes (`StatementHandle.utf8(of:at:)`).
    @inline(__always)
    func utf8(at index: Int32) -> UnsafeRawBufferPointer {
        StatementHandle.utf8(of: handle, at: index)
    }

    /// A column's bytes as stored, valid until the row changes (`StatementHandle.bytes(of:at:)`).
    @inline(__always)
    func bytes(at index: Int32) -> UnsafeRawBufferPointer {
        StatementHandle.bytes(of: handle, at: index)
    }
}

// Statements are used only on their connection's queue.
@available(*, unavailable)
extension Statement: Sendable {}
