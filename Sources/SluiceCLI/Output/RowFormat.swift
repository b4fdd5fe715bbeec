import ArgumentParser
import Foundation
import Sluice

/// How `sluice query` prints rows (written as they are read: `RowStream`).
enum RowFormat: String, ExpressibleByArgument, CaseIterable {
    /// One case per format.
    case table, json, csv
}

/// JSON output: objects keyed by column name, in column order, with SQLite
/// values (integers and reals as numbers, text as strings, blobs as base64
/// strings, NULL as null).
///
/// Foundation's JSONEncoder does not keep key order, so this writes the
/// (small) grammar itself.
enum JSONRows {
    /// A row as a JSON object.
    static func object(_ row: Row) -> String {
        var text = "{"
        for (index, (column, value)) in zip(row.columns, row.values).enumerated() {
            if index > 0 { text += "," }
            text += string(column) + ":" + self.value(value)
        }
        return text + "}"
    }

    /// A value as JSON.
    static func value(_ value: SQLiteValue) -> String {
        switch value {
        case .null: return "null"
        case .integer(let int): return String(int)
        case .real(let double):
            if double.isNaN { return "null" }
            if double.isInfinite { return double > 0 ? "1e999" : "-1e999" }
            return "\(double)"
        case .text(let text): return string(text)
        case .blob(let data): return string(data.base64EncodedString())
        }
    }

    /// Text as a JSON string.
    static func string(_ text: String) -> String {
        var text = text
        var out: [UInt8] = []
        text.withUTF8 { appendString(utf8: $0, to: &out) }
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends a JSON string of `bytes` when they are valid UTF-8, checking and escaping in
    /// one pass (runs with nothing to escape copied whole); false, with nothing appended,
    /// when they are not. With `validating` false the bytes are known to be valid UTF-8
    /// (a `String`'s), and it always appends.
    @discardableResult
    static func appendStringIfValid(utf8 bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8], validating: Bool = true) -> Bool {
        let mark = out.count
        out.append(UInt8(ascii: "\""))
        var start = 0
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte >= 0x80 {
                guard validating else {
                    index += 1
                    continue
                }
                let length = sequenceLength(bytes, at: index)
                guard length > 0 else {
                    out.removeSubrange(mark...)
                    return false
                }
                index += length
                continue
            }
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
                appendEscape(byte, to: &out)
                start = index + 1
            }
            index += 1
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
        out.append(UInt8(ascii: "\""))
        return true
    }

    /// The length of the well-formed UTF-8 sequence that starts at `index` (a byte of 0x80
    /// or more), or 0 when it is not one (Unicode's table 3-7: no overlong forms, no
    /// surrogates, nothing past U+10FFFF).
    static func sequenceLength(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Int {
        func continuation(_ offset: Int, _ range: ClosedRange<UInt8> = 0x80...0xBF) -> Bool {
            index + offset < bytes.count && range.contains(bytes[index + offset])
        }
        switch bytes[index] {
        case 0xC2...0xDF: return continuation(1) ? 2 : 0
        case 0xE0: return continuation(1, 0xA0...0xBF) && continuation(2) ? 3 : 0
        case 0xE1...0xEC, 0xEE...0xEF: return continuation(1) && continuation(2) ? 3 : 0
        case 0xED: return continuation(1, 0x80...0x9F) && continuation(2) ? 3 : 0
        case 0xF0: return continuation(1, 0x90...0xBF) && continuation(2) && continuation(3) ? 4 : 0
        case 0xF1...0xF3: return continuation(1) && continuation(2) && continuation(3) ? 4 : 0
        case 0xF4: return continuation(1, 0x80...0x8F) && continuation(2) && continuation(3) ? 4 : 0
        default: return 0
        }
    }

    /// Appends the escape of `"`, `\` or a control character.
    static func appendEscape(_ byte: UInt8, to out: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
        case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
        case 0x0A: out.append(contentsOf: #"\n"#.utf8)
        case 0x0D: out.append(contentsOf: #"\r"#.utf8)
        case 0x09: out.append(contentsOf: #"\t"#.utf8)
        default: out.append(contentsOf: String(format: #"\u%04x"#, byte).utf8)
        }
    }

    /// Appends a JSON string of valid UTF-8 text: `"`, `\` and control
    /// characters escaped, runs with nothing to escape copied whole.
    static func appendString(utf8 bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        appendStringIfValid(utf8: bytes, to: &out, validating: false)
    }
}

/// A readable table for terminals: aligned columns, numbers on the right,
/// long cells cut with an ellipsis. Widths are display widths (`DisplayWidth`):
/// Chinese characters and emoji take two columns, combining marks none.
enum TableRenderer {
    /// The widest a cell is drawn; longer ones are cut with an ellipsis.
    static let maxCellWidth = 40

    /// Rows as a whole table, with the header and the row count.
    static func render(_ rows: [Row], columns: [String]) -> String {
        let layout = Layout(columns: columns, rows: rows.map(\.values))
        let lines = [layout.header] + rows.map { layout.line($0.values.map(cell)) } + [footer(rows.count)]
        return lines.joined(separator: "\n")
    }

    /// `(3 rows)`.
    static func footer(_ count: Int) -> String { "(\(count) row\(count == 1 ? "" : "s"))" }

    /// Column widths and alignments, from the header and some rows.
    struct Layout {
        /// Each column's width.
        let widths: [Int]
        /// Whether each column holds numbers only (drawn on the right).
        let numeric: [Bool]
        /// The column names.
        let columns: [String]

        /// The layout that fits these rows.
        init(columns: [String], rows: [[SQLiteValue]]) {
            self.columns = columns
            var widths = columns.map { min(DisplayWidth.of($0), TableRenderer.maxCellWidth) }
            for row in rows {
                for (index, value) in row.enumerated() where index < widths.count {
                    widths[index] = max(widths[index], DisplayWidth.of(TableRenderer.cell(value)))
                }
            }
            self.widths = widths
            numeric = columns.indices.map { index in
                rows.contains { index < $0.count && ($0[index].isNumber) } && !rows.contains { index < $0.count && $0[index].isText }
            }
        }

        /// The header line and the rule under it.
        var header: String {
            line(columns) + "\n" + widths.map { String(repeating: "─", count: $0) }.joined(separator: "─┼─")
        }

        /// One line of cells, each padded (or cut) to its column's width.
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { index, value in
                guard index < widths.count else { return value }
                let fitted = DisplayWidth.truncate(value, to: widths[index])
                let padding = String(repeating: " ", count: max(0, widths[index] - DisplayWidth.of(fitted)))
                return numeric[index] ? padding + fitted : fitted + padding
            }.joined(separator: " │ ")
        }
    }

    /// A value as a cell shows it (`NULL`, blobs by size, line breaks as ⏎), cut to `maxCellWidth`.
    static func cell(_ value: SQLiteValue) -> String {
        var text: String
        switch value {
        case .null: text = "NULL"
        case .blob(let data): text = "<\(data.count) bytes>"
        default: text = value.description
        }
        text = String(text.map { $0.isNewline ? "⏎" : $0 })
        return DisplayWidth.truncate(text, to: maxCellWidth)
    }
}

extension SQLiteValue {
    /// Whether the value is a number.
    fileprivate var isNumber: Bool {
        switch self {
        case .integer, .real: return true
        default: return false
        }
    }

    /// Whether the value is text.
    fileprivate var isText: Bool {
        if case .text = self { return true }
        return false
    }
}

/// How many terminal columns text takes: East Asian wide and fullwidth
/// characters and emoji two, combining marks and other zero-width scalars
/// none, everything else one (per grapheme, as terminals draw them).
enum DisplayWidth {
    /// The display width of text.
    static func of(_ text: String) -> Int {
        text.reduce(0) { $0 + of($1) }
    }

    /// The display width of one grapheme.
    static func of(_ character: Character) -> Int {
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if first.isASCII { return first.value < 0x20 || first.value == 0x7F ? 0 : 1 }
        if scalars.contains(where: { $0.properties.isEmojiPresentation }) || scalars.contains("\u{FE0F}") { return 2 }
        if isWide(first.value) { return 2 }
        if scalars.allSatisfy(isZeroWidth) { return 0 }
        return 1
    }

    /// `text` cut to at most `width` columns, ending in "…" when cut.
    static func truncate(_ text: String, to width: Int) -> String {
        guard of(text) > width else { return text }
        var result = ""
        var used = 0
        for character in text {
            let next = of(character)
            if used + next > width - 1 { break }
            result.append(character)
            used += next
        }
        return result + "…"
    }

    /// Whether a scalar takes no column (combining marks, joiners, variation selectors).
    private static func isZeroWidth(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return true
        default: return scalar.value == 0x200B || (0x1160...0x11FF).contains(scalar.value)    // zero width space, Hangul jungseong/jongseong
        }
    }

    /// East Asian Width W or F (Unicode's EastAsianWidth.txt, the large blocks).
    private static func isWide(_ value: UInt32) -> Bool {
        switch value {
        case 0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x2E80...0x303E, 0x3041...0x33FF,
             0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3,
             0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
             0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x1FA70...0x1FAFF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return true
        default:
            return false
        }
    }
}
