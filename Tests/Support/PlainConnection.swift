import CSQLite
import Foundation
import Sluice

/// A plain SQLite connection through the C API, independent of Sluice:
/// what the tests compare delivered results with.
public final class PlainConnection {
    private var handle: OpaquePointer?

    /// - Parameters:
    ///   - path: the database file.
    ///   - vfs: the VFS to open it through (the default unless named).
    ///   - busyTimeout: how long a statement waits for a lock, in ms.
    public init(path: String, vfs: String? = nil, busyTimeout: Int32 = 5_000) {
        sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE, vfs)
        sqlite3_busy_timeout(handle, busyTimeout)
    }

    deinit { sqlite3_close_v2(handle) }

    /// Runs SQL (several statements allowed); fails the caller with SQLite's message.
    public func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        if sqlite3_exec(handle, sql, nil, nil, &message) != SQLITE_OK {
            defer { sqlite3_free(message) }
            throw PlainError(message: message.map { String(cString: $0) } ?? "error", sql: sql)
        }
    }

    /// Every row of a query, values as SQLite returns them.
    public func rows(_ sql: String) throws -> [[SQLiteValue]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else {
            throw PlainError(message: String(cString: sqlite3_errmsg(handle)), sql: sql)
        }
        defer { sqlite3_finalize(statement) }
        var rows: [[SQLiteValue]] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            rows.append((0..<sqlite3_column_count(statement)).map { column in
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER: return .integer(sqlite3_column_int64(statement, column))
                case SQLITE_FLOAT: return .real(sqlite3_column_double(statement, column))
                case SQLITE_TEXT:
                    // Text first (converted to UTF-8), then its length: text after an embedded NUL counts.
                    guard let text = sqlite3_column_text(statement, column) else { return .text("") }
                    let count = Int(sqlite3_column_bytes(statement, column))
                    return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
                case SQLITE_BLOB:
                    let count = Int(sqlite3_column_bytes(statement, column))
                    guard count > 0, let bytes = sqlite3_column_blob(statement, column) else { return .blob(Data()) }
                    return .blob(Data(bytes: bytes, count: count))
                default: return .null
                }
            })
        }
        return rows
    }

    public struct PlainError: Error, CustomStringConvertible {
        public let message: String
        public let sql: String
        public var description: String { "\(message) in \(sql)" }
    }
}
