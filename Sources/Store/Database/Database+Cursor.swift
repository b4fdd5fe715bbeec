import Foundation

/// One row of a query being read, handed to `Database.forEachRow`: its
/// columns read straight from SQLite, without making a `Row` (so a tool can
/// stream millions of rows in flat memory). Valid only during the call it is
/// given to.
public struct RowCursor {
    /// The storage class of a column's value in this row.
    public enum ColumnType: Sendable {
        case null, integer, real, text, blob
    }

    let handle: SQLiteStatement

    /// The number of columns.
    public var columnCount: Int { StatementHandle.columnCount(handle) }

    /// The storage class of column `index`'s value.
    ///
    /// - Parameter index: the 0-based column.
    /// - Returns: the value's storage class in this row.
    public func type(at index: Int) -> ColumnType {
        switch StatementHandle.storageClass(of: handle, at: Int32(index)) {
        case .integer: return .integer
        case .real: return .real
        case .text: return .text
        case .blob: return .blob
        case .null: return .null
        }
    }

    /// Column `index` as an integer (SQLite's conversion for other types).
    ///
    /// - Parameter index: the 0-based column.
    /// - Returns: the integer.
    public func int64(at index: Int) -> Int64 { StatementHandle.int64(of: handle, at: Int32(index)) }

    /// Column `index` as a real (SQLite's conversion for other types).
    ///
    /// - Parameter index: the 0-based column.
    /// - Returns: the real.
    public func double(at index: Int) -> Double { StatementHandle.double(of: handle, at: Int32(index)) }

    /// Calls `body` with column `index`'s text as UTF-8 bytes (valid only during the call; not validated).
    ///
    /// - Parameters:
    ///   - index: the 0-based column.
    ///   - body: reads the bytes; they are gone when it returns.
    public func withUTF8(at index: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> Void) rethrows {
        try body(StatementHandle.utf8(of: handle, at: Int32(index)).assumingMemoryBound(to: UInt8.self))
    }

    /// Calls `body` with column `index`'s bytes (valid only during the call).
    ///
    /// - Parameters:
    ///   - index: the 0-based column.
    ///   - body: reads the bytes; they are gone when it returns.
    public func withBytes(at index: Int, _ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        try body(StatementHandle.bytes(of: handle, at: Int32(index)))
    }

    /// Column `index` as a value.
    ///
    /// - Parameter index: the 0-based column.
    /// - Returns: the value, of its storage class.
    public func value(at index: Int) -> SQLiteValue { StatementHandle.value(of: handle, at: Int32(index)) }
}

extension Database {
    /// Reads a table's rows one at a time, filtered, ordered (ties broken by
    /// the primary key) and limited, handing each to `body` as it is read:
    /// memory stays flat however many rows there are. Columns come in the
    /// table's order.
    ///
    /// - Returns: how many rows were read.
    ///
    /// - Parameters:
    ///   - table: the table's name.
    ///   - filter: which rows; all of them when nil.
    ///   - orderBy: the order; the primary key breaks ties (and orders when empty).
    ///   - limit: at most this many rows; all when nil.
    ///   - body: reads one row; valid only during the call. Throwing stops the read.
    /// - Throws: `StoreError` naming an unknown table or column, a failed read,
    ///   or what `body` threw.
    /// - Complexity: one SQL query, read as it runs: O(1) memory.
    @discardableResult
    public func forEachRow(table: String, filter: Filter? = nil, orderBy: [Ordering] = [], limit: Int? = nil,
                           _ body: (RowCursor) throws -> Void) throws -> Int {
        var select = SelectBuilder(table: try tableInfo(table), schema: schemaLookup)
        (select.filter, select.orderBy, select.limit) = (filter, orderBy, limit)
        let (sql, arguments) = try select.build()
        let statement = try connection.prepare(sql: sql)
        try statement.bind(arguments)
        var count = 0
        let cursor = RowCursor(handle: statement.handle)
        while try statement.step() {
            try body(cursor)
            count += 1
        }
        return count
    }
}
