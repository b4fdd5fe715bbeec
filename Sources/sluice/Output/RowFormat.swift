import ArgumentParser
import CSV
import Foundation
import Store

/// How `sluice query` prints rows.
enum RowFormat: String, ExpressibleByArgument, CaseIterable {
    case table, json, csv

    func render(_ rows: [Row], columns: [String]) throws -> String {
        switch self {
        case .table: return TableRenderer.render(rows, columns: columns)
        case .json: return JSONRows.array(rows)
        case .csv: return try CSVRows.render(rows, columns: columns)
        }
    }
}

/// JSON output: objects keyed by column name, in column order, with SQLite
/// values (integers and reals as numbers, text as strings, blobs as base64
/// strings, NULL as null).
///
/// Foundation's JSONEncoder does not keep key order, so this writes the
/// (small) grammar itself.
enum JSONRows {
    static func array(_ rows: [Row]) -> String {
        if rows.isEmpty { return "[]" }
        return "[\n" + rows.map { "  " + object($0) }.joined(separator: ",\n") + "\n]"
    }

    static func object(_ row: Row) -> String {
        var text = "{"
        for (index, (column, value)) in zip(row.columns, row.values).enumerated() {
            if index > 0 { text += "," }
            text += string(column) + ":" + self.value(value)
        }
        return text + "}"
    }

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

    static func string(_ text: String) -> String {
        var escaped = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                escaped += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped + "\""
    }
}

/// CSV output through CSV.swift: a header row, then one record per row;
/// NULL is an empty field, blobs are base64.
enum CSVRows {
    static func render(_ rows: [Row], columns: [String]) throws -> String {
        let stream = OutputStream(toMemory: ())
        stream.open()
        defer { stream.close() }
        let writer = try CSVWriter(stream: stream)
        try writer.write(row: columns)
        for row in rows {
            try writer.write(row: row.values.map(field))
        }
        guard let data = stream.property(forKey: .dataWrittenToMemoryStreamKey) as? Data else { return "" }
        return String(decoding: data, as: UTF8.self)
    }

    static func field(_ value: SQLiteValue) -> String {
        switch value {
        case .null: return ""
        case .blob(let data): return data.base64EncodedString()
        default: return value.description
        }
    }
}

/// A readable table for terminals: aligned columns, numbers on the right,
/// long cells cut with an ellipsis.
enum TableRenderer {
    static let maxCellWidth = 40

    static func render(_ rows: [Row], columns: [String]) -> String {
        let cells: [[String]] = rows.map { row in row.values.map(cell) }
        var widths = columns.map(\.count)
        for row in cells {
            for (index, cell) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], cell.count)
            }
        }
        let numeric: [Bool] = columns.indices.map { index in
            rows.contains { if case .integer = $0.values[index] { return true }; if case .real = $0.values[index] { return true }; return false }
                && !rows.contains { if case .text = $0.values[index] { return true }; return false }
        }
        func line(_ values: [String]) -> String {
            values.enumerated().map { index, value in
                let padding = String(repeating: " ", count: max(0, widths[index] - value.count))
                return numeric[index] ? padding + value : value + padding
            }.joined(separator: " │ ")
        }
        var output = [line(columns), widths.map { String(repeating: "─", count: $0) }.joined(separator: "─┼─")]
        output += cells.map(line)
        output.append("(\(rows.count) row\(rows.count == 1 ? "" : "s"))")
        return output.joined(separator: "\n")
    }

    static func cell(_ value: SQLiteValue) -> String {
        var text: String
        switch value {
        case .null: text = "NULL"
        case .blob(let data): text = "<\(data.count) bytes>"
        default: text = value.description
        }
        text = String(text.map { $0.isNewline ? "⏎" : $0 })
        if text.count > maxCellWidth { text = String(text.prefix(maxCellWidth - 1)) + "…" }
        return text
    }
}
