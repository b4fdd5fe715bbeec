import Foundation
import Sluice

/// Standard output with a 64 KB buffer: rows are written as they are read,
/// in few system calls.
final class OutputBuffer {
    private var bytes: [UInt8] = []
    private let capacity = 1 << 16

    init() { bytes.reserveCapacity(capacity + 4096) }

    func append(_ byte: UInt8) {
        bytes.append(byte)
    }

    func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
        flushIfFull()
    }

    func append(_ buffer: UnsafeBufferPointer<UInt8>) {
        bytes.append(contentsOf: buffer)
    }

    /// Appends a JSON string of valid UTF-8 text (`JSONRows.appendString`).
    func appendJSONString(utf8 text: UnsafeBufferPointer<UInt8>) {
        JSONRows.appendString(utf8: text, to: &bytes)
    }

    /// Writes out what is buffered once it passes the buffer's size (call between rows).
    func flushIfFull() {
        if bytes.count >= capacity { flush() }
    }

    func flush() {
        guard !bytes.isEmpty else { return }
        FileHandle.standardOutput.write(Data(bytes))
        bytes.removeAll(keepingCapacity: true)
    }
}

/// Writes query rows as they are read, in the `sluice query` formats (for
/// the table format, column widths come from the first
/// `TableStream.lookahead` rows).
protocol RowStream {
    func row(_ cursor: RowCursor)
    func finish(count: Int)
}

/// CSV (RFC 4180): a header row, then one record per row; NULL is an empty
/// field, blobs are base64, fields holding a comma, quote or line break are
/// quoted with quotes doubled.
///
/// Written here rather than through CSV.swift's `CSVWriter`, which writes
/// one byte per `OutputStream.write` call: 5.2 s for 154,824 rows where
/// `sqlite3 -csv` takes 0.25 s. CSV.swift still reads seed files, and the
/// tests read this output back with it.
final class CSVStream: RowStream {
    private let out: OutputBuffer
    private let columns: Int

    init(columns: [String], out: OutputBuffer) {
        self.out = out
        self.columns = columns.count
        for (index, name) in columns.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            var name = name
            name.withUTF8 { field($0) }
        }
        out.append("\n")
    }

    func row(_ cursor: RowCursor) {
        for index in 0..<columns {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            switch cursor.type(at: index) {
            case .null: break
            case .integer: out.append(String(cursor.int64(at: index)))
            case .real: out.append(String(cursor.double(at: index)))
            case .text: cursor.withUTF8(at: index) { field($0) }
            case .blob: cursor.withBytes(at: index) { out.append(Data($0).base64EncodedString()) }
            }
        }
        out.append(UInt8(ascii: "\n"))
        out.flushIfFull()
    }

    func finish(count: Int) { out.flush() }

    private func field(_ bytes: UnsafeBufferPointer<UInt8>) {
        let needsQuotes = bytes.contains { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 0x0A || $0 == 0x0D }
        guard needsQuotes else { return out.append(bytes) }
        out.append(UInt8(ascii: "\""))
        for byte in bytes {
            if byte == UInt8(ascii: "\"") { out.append(byte) }
            out.append(byte)
        }
        out.append(UInt8(ascii: "\""))
    }
}

/// JSON: an array of objects keyed by column name (as `JSONRows.object`
/// writes them), one per line; `[]` when there are none.
final class JSONStream: RowStream {
    private let out: OutputBuffer
    private let keys: [[UInt8]]
    private var first = true

    init(columns: [String], out: OutputBuffer) {
        self.out = out
        keys = columns.map { Array((JSONRows.string($0) + ":").utf8) }
    }

    func row(_ cursor: RowCursor) {
        out.append(first ? "[\n  {" : ",\n  {")
        first = false
        for (index, key) in keys.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            key.withUnsafeBufferPointer { out.append($0) }
            switch cursor.type(at: index) {
            case .null: out.append("null")
            case .integer: out.append(String(cursor.int64(at: index)))
            case .real: out.append(JSONRows.value(.real(cursor.double(at: index))))
            case .text: cursor.withUTF8(at: index) { string($0) }
            case .blob: cursor.withBytes(at: index) { out.append(JSONRows.string(Data($0).base64EncodedString())) }
            }
        }
        out.append(UInt8(ascii: "}"))
        out.flushIfFull()
    }

    func finish(count: Int) {
        out.append(first ? "[]\n" : "\n]\n")
        out.flush()
    }

    /// A JSON string of UTF-8 text, as `JSONRows.string` writes it.
    private func string(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard bytes.contains(where: { $0 >= 0x80 }) else { return out.appendJSONString(utf8: bytes) }
        // Not plain ASCII: through String, which repairs invalid UTF-8 as the other formats do.
        var text = String(decoding: bytes, as: UTF8.self)
        text.withUTF8 { out.appendJSONString(utf8: $0) }
    }
}

/// The table format, streamed: the first `lookahead` rows decide the
/// column widths (and which columns are numbers); later cells wider than
/// their column are cut with an ellipsis.
final class TableStream: RowStream {
    static let lookahead = 1_000
    private let out: OutputBuffer
    private let columns: [String]
    private var pending: [[SQLiteValue]] = []
    private var layout: TableRenderer.Layout?

    init(columns: [String], out: OutputBuffer) {
        self.out = out
        self.columns = columns
    }

    func row(_ cursor: RowCursor) {
        let values = (0..<columns.count).map { cursor.value(at: $0) }
        if let layout {
            out.append(layout.line(values.map(TableRenderer.cell)) + "\n")
            out.flushIfFull()
        } else {
            pending.append(values)
            if pending.count >= Self.lookahead { start() }
        }
    }

    func finish(count: Int) {
        if layout == nil { start() }
        out.append(TableRenderer.footer(count) + "\n")
        out.flush()
    }

    private func start() {
        let layout = TableRenderer.Layout(columns: columns, rows: pending)
        self.layout = layout
        out.append(layout.header + "\n")
        for values in pending {
            out.append(layout.line(values.map(TableRenderer.cell)) + "\n")
            out.flushIfFull()
        }
        pending = []
    }
}
