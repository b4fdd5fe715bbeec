import Foundation
import Sluice

/// Standard output with a 64 KB buffer: rows are written as they are read,
/// in few system calls.
final class OutputBuffer {
    /// What is buffered.
    private var bytes: [UInt8] = []
    /// How much is buffered before it is written out.
    private let capacity = 1 << 16

    /// An empty buffer.
    init() { bytes.reserveCapacity(capacity + 4096) }

    /// Appends a byte.
    func append(_ byte: UInt8) {
        bytes.append(byte)
    }

    /// Appends text, writing out when the buffer is full.
    func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
        flushIfFull()
    }

    /// Appends bytes.
    func append(_ buffer: UnsafeBufferPointer<UInt8>) {
        bytes.append(contentsOf: buffer)
    }

    /// Appends what `body` appends, in one access to the buffer: a row's many small
    /// appends each paid Swift's exclusivity check on the class's array (a sixth of
    /// `query --format json`'s time).
    func write(_ body: (inout [UInt8]) -> Void) {
        body(&bytes)
    }

    /// Appends an integer's decimal digits (no String made).
    func append(integer value: Int64) {
        Self.append(integer: value, to: &bytes)
    }

    /// Appends an integer's decimal digits to `bytes`.
    static func append(integer value: Int64, to bytes: inout [UInt8]) {
        var magnitude = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = 20
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if value < 0 { bytes.append(UInt8(ascii: "-")) }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start..<20]))
        }
    }

    /// Writes out what is buffered once it passes the buffer's size (call between rows).
    func flushIfFull() {
        if bytes.count >= capacity { flush() }
    }

    /// Writes out what is buffered.
    func flush() {
        guard !bytes.isEmpty else { return }
        FileHandle.standardOutput.write(Data(bytes))
        bytes.removeAll(keepingCapacity: true)
    }

    /// Appends `items`, formatted one at a time and separated by commas:
    /// a change of 200,000 rows is written as it is formatted, not built as
    /// one string first (its pieces, the joined string and its bytes each
    /// held the whole line at once).
    func appendList<C: Collection>(_ items: C, _ format: (C.Element) -> String) {
        var first = true
        for item in items {
            if !first { append(UInt8(ascii: ",")) }
            first = false
            append(format(item))
        }
    }
}

/// Writes query rows as they are read, in the `sluice query` formats (for
/// the table format, column widths come from the first
/// `TableStream.lookahead` rows).
protocol RowStream {
    /// Writes one row, as it is read.
    func row(_ cursor: RowCursor)
    /// Ends the output after `count` rows.
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
    /// Where the output goes.
    private let out: OutputBuffer
    /// The number of columns.
    private let columns: Int

    /// Writes the header row at once.
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

    /// Writes one record.
    func row(_ cursor: RowCursor) {
        for index in 0..<columns {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            switch cursor.type(at: index) {
            case .null: break
            case .integer: out.append(integer: cursor.int64(at: index))
            case .real: out.append(String(cursor.double(at: index)))
            case .text: cursor.withUTF8(at: index) { field($0) }
            case .blob: cursor.withBytes(at: index) { out.append(Data($0).base64EncodedString()) }
            }
        }
        out.append(UInt8(ascii: "\n"))
        out.flushIfFull()
    }

    /// Writes out what is left.
    func finish(count: Int) { out.flush() }

    /// Writes one field, quoted when it needs to be.
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
    /// Where the output goes.
    private let out: OutputBuffer
    /// Each column's name as a JSON string.
    private let keys: [[UInt8]]
    /// Whether no row was written yet.
    private var first = true

    /// A writer of JSON objects, one per line.
    init(columns: [String], out: OutputBuffer) {
        self.out = out
        keys = columns.map { Array((JSONRows.string($0) + ":").utf8) }
    }

    /// Writes one row as a JSON object.
    func row(_ cursor: RowCursor) {
        let opening = first ? "[\n  {" : ",\n  {"
        first = false
        let keys = keys
        out.write { bytes in
            bytes.append(contentsOf: opening.utf8)
            for index in keys.indices {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                bytes.append(contentsOf: keys[index])
                switch cursor.type(at: index) {
                case .null: bytes.append(contentsOf: "null".utf8)
                case .integer: OutputBuffer.append(integer: cursor.int64(at: index), to: &bytes)
                case .real: bytes.append(contentsOf: JSONRows.value(.real(cursor.double(at: index))).utf8)
                case .text: cursor.withUTF8(at: index) { Self.string($0, to: &bytes) }
                case .blob: cursor.withBytes(at: index) { bytes.append(contentsOf: JSONRows.string(Data($0).base64EncodedString()).utf8) }
                }
            }
            bytes.append(UInt8(ascii: "}"))
        }
        out.flushIfFull()
    }

    /// Writes out what is left.
    func finish(count: Int) {
        out.append(first ? "[]\n" : "\n]\n")
        out.flush()
    }

    /// A JSON string of UTF-8 text, as `JSONRows.string` writes it.
    private static func string(_ text: UnsafeBufferPointer<UInt8>, to bytes: inout [UInt8]) {
        guard !JSONRows.appendStringIfValid(utf8: text, to: &bytes) else { return }
        // Not valid UTF-8: through String, which repairs it as the other formats do.
        var repaired = String(decoding: text, as: UTF8.self)
        repaired.withUTF8 { JSONRows.appendString(utf8: $0, to: &bytes) }
    }
}

/// The table format, streamed: the first `lookahead` rows decide the
/// column widths (and which columns are numbers); later cells wider than
/// their column are cut with an ellipsis.
final class TableStream: RowStream {
    /// How many rows decide the column widths.
    static let lookahead = 1_000
    /// Where the output goes.
    private let out: OutputBuffer
    /// The column names.
    private let columns: [String]
    /// The first rows, held until the layout is known.
    private var pending: [[SQLiteValue]] = []
    /// The layout, once known.
    private var layout: TableRenderer.Layout?

    /// A table writer.
    init(columns: [String], out: OutputBuffer) {
        self.out = out
        self.columns = columns
    }

    /// Holds the row until the layout is known, then writes it.
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

    /// Writes what is held, then the row count.
    func finish(count: Int) {
        if layout == nil { start() }
        out.append(TableRenderer.footer(count) + "\n")
        out.flush()
    }

    /// Chooses the layout from the rows held and writes them.
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
