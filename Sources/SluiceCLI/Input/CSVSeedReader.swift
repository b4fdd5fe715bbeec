import CSV
import Foundation
import Sluice

/// Reads seed CSV (RFC 4180, with a header row of column names) for one
/// table, converting each field by its column's type affinity.
///
/// Fields are split by CSV.swift. That reader is lenient (an unterminated
/// quote swallows the rest of the file), so a first pass checks the quoting
/// and reports the line and column of a bad quote.
enum CSVSeedReader {
    /// The rows of a CSV file for `table`: a header of column names, then one
    /// record per row (an empty field is NULL).
    ///
    /// - Throws: `InputError` naming the file and line: an unknown column, a
    ///   record with the wrong number of fields, malformed CSV.
    static func read(_ text: String, file: String, table: TableInfo) throws -> SeedData {
        try checkQuotes(text, file: file)
        let reader: CSVReader
        do {
            reader = try CSVReader(string: text, hasHeaderRow: true)
        } catch {
            throw InputError(file: file, location: "line 1", message: "cannot read the header row (column names)")
        }
        guard let header = reader.headerRow, !header.isEmpty, header != [""] else {
            throw InputError(file: file, location: "line 1", message: "the header row (column names) is missing")
        }
        var columns: [TableInfo.Column] = []
        for (offset, name) in header.enumerated() {
            let trimmed = name.trimmingCharacters(in: .whitespaces)
            guard let column = table.column(named: trimmed) else {
                throw InputError(file: file, location: "line 1, field \(offset + 1)",
                                 message: "unknown column '\(trimmed)' in table \(table.name) (columns: \(table.columnNames.joined(separator: ", ")))")
            }
            columns.append(column)
        }
        if let duplicate = Dictionary(grouping: columns.map(\.name), by: { $0 }).first(where: { $0.value.count > 1 }) {
            throw InputError(file: file, location: "line 1", message: "column '\(duplicate.key)' appears twice in the header")
        }

        var entries: [SeedData.Entry] = []
        var line = 1 + newlineCount(header) + 1
        while let fields = reader.next() {
            defer { line += 1 + newlineCount(fields) }
            if fields == [""] { continue } // a blank line
            let location = "line \(line)"
            guard fields.count == columns.count else {
                throw InputError(file: file, location: location, message: "\(fields.count) field\(fields.count == 1 ? "" : "s"), but the header has \(columns.count)")
            }
            var values: [SQLiteValue] = []
            for (column, field) in zip(columns, fields) {
                values.append(try convert(field, for: column, file: file, location: location))
            }
            entries.append(SeedData.Entry(row: Row(columns: columns.map(\.name), values: values), location: location))
        }
        var seed = SeedData()
        seed.tables.append((table.name, entries))
        return seed
    }

    /// An empty field is NULL; others are read by the column's affinity.
    static func convert(_ field: String, for column: TableInfo.Column, file: String, location: String) throws -> SQLiteValue {
        if field.isEmpty { return .null }
        let trimmed = field.trimmingCharacters(in: .whitespaces)
        switch column.affinity {
        case .text:
            return .text(field)
        case .integer:
            if let int = Int64(trimmed) { return .integer(int) }
            if let double = Double(trimmed), let exact = Int64(exactly: double) { return .integer(exact) }
            throw InputError(file: file, location: location, message: "column '\(column.name)' expects an integer, got \"\(field)\"")
        case .real, .numeric:
            if let int = Int64(trimmed) { return column.affinity == .real ? .real(Double(int)) : .integer(int) }
            if let double = Double(trimmed), double.isFinite { return .real(double) }
            throw InputError(file: file, location: location, message: "column '\(column.name)' expects a number, got \"\(field)\"")
        case .blob:
            if let int = Int64(trimmed) { return .integer(int) }
            if let double = Double(trimmed), double.isFinite { return .real(double) }
            return .text(field)
        }
    }

    /// How many line breaks the fields of a record hold (to count lines).
    private static func newlineCount(_ fields: [String]) -> Int {
        fields.reduce(0) { count, field in count + field.reduce(0) { $0 + ($1.isNewline ? 1 : 0) } }
    }

    /// Checks RFC 4180 quoting: a quoted field ends with a quote followed by
    /// a comma, a line break or the end; a quote inside it is doubled.
    static func checkQuotes(_ text: String, file: String) throws {
        var line = 1
        var column = 0
        var inQuotes = false
        var atFieldStart = true
        var quoteLine = 0
        var quoteColumn = 0
        var iterator = text.makeIterator()
        var pending: Character? = nil
        func next() -> Character? {
            if let character = pending { pending = nil; return character }
            return iterator.next()
        }
        while let character = next() {
            column += 1
            if inQuotes {
                if character == "\"" {
                    let following = next()
                    if following == "\"" { column += 1; continue }
                    inQuotes = false
                    guard let following else { return }
                    if following == "," {
                        column += 1
                        atFieldStart = true
                    } else if following.isNewline {
                        line += 1
                        column = 0
                        atFieldStart = true
                    } else {
                        throw InputError(file: file, location: "line \(line), column \(column)",
                                         message: "a closing quote must be followed by a comma or a line break (write a quote inside a quoted field as \"\")")
                    }
                } else if character.isNewline {
                    line += 1
                    column = 0
                }
                continue
            }
            if character == "\"" && atFieldStart {
                inQuotes = true
                quoteLine = line
                quoteColumn = column
                atFieldStart = false
            } else if character == "," {
                atFieldStart = true
            } else if character.isNewline {
                line += 1
                column = 0
                atFieldStart = true
            } else {
                atFieldStart = false
            }
        }
        if inQuotes {
            throw InputError(file: file, location: "line \(quoteLine), column \(quoteColumn)", message: "unterminated quoted field: the quote opened here is never closed")
        }
    }
}
