import Foundation
import Sluice

/// Reads seed JSON: `{"person": [{...}], "package": [...]}`, or a plain
/// array of row objects when the table is given.
enum JSONSeedReader {
    /// A JSON value, decoded without losing the difference between integers,
    /// reals and booleans.
    enum Value: Decodable {
        /// The JSON value kinds a seed file may hold.
        case null, bool(Bool), integer(Int64), real(Double), string(String), array([Value]), object([String: Value])

        /// Decodes any JSON value.
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() { self = .null }
            else if let bool = try? container.decode(Bool.self) { self = .bool(bool) }
            else if let int = try? container.decode(Int64.self) { self = .integer(int) }
            else if let double = try? container.decode(Double.self) { self = .real(double) }
            else if let string = try? container.decode(String.self) { self = .string(string) }
            else if let array = try? container.decode([Value].self) { self = .array(array) }
            else { self = .object(try container.decode([String: Value].self)) }
        }

        /// The kind's name, for error messages.
        var kind: String {
            switch self {
            case .null: return "null"
            case .bool: return "a boolean"
            case .integer, .real: return "a number"
            case .string: return "a string"
            case .array: return "an array"
            case .object: return "an object"
            }
        }
    }

    /// The rows of a JSON file: an object of tables (`{"person": [...]}`) or
    /// an array of rows for `table`.
    ///
    /// - Throws: `InputError` naming the file and the row: malformed JSON (with
    ///   its line and column), a value that is not a row, an unsupported value.
    static func read(_ data: Data, file: String, table: String?) throws -> SeedData {
        let value: Value
        do {
            value = try JSONDecoder().decode(Value.self, from: data)
        } catch {
            throw InputError(file: file, location: location(ofSyntaxErrorIn: data), message: "malformed JSON: \(reason(ofSyntaxErrorIn: data))")
        }
        var seed = SeedData()
        switch (value, table) {
        case (.array(let rows), let table?):
            seed.tables.append((table, try entries(rows, table: table, file: file)))
        case (.array, nil):
            throw InputError(file: file, location: nil, message: "the file is a JSON array of rows; name their table with --table")
        case (.object(let tables), nil):
            for name in tables.keys.sorted() {
                guard case .array(let rows) = tables[name] ?? .null else {
                    throw InputError(file: file, location: nil, message: "the value of \"\(name)\" must be an array of row objects, found \(tables[name]?.kind ?? "nothing")")
                }
                seed.tables.append((name, try entries(rows, table: name, file: file)))
            }
        case (.object(let tables), let table?):
            // {"person": [...]} with --table person is fine; anything else is ambiguous.
            guard tables.count == 1, let only = tables[table], case .array(let rows) = only else {
                throw InputError(file: file, location: nil, message: "--table \(table) expects a JSON array of rows (or an object with only the key \"\(table)\")")
            }
            seed.tables.append((table, try entries(rows, table: table, file: file)))
        default:
            throw InputError(file: file, location: nil, message: "expected an object of tables ({\"person\": [...]}) or an array of rows, found \(value.kind)")
        }
        return seed
    }

    /// The rows of one table's array.
    private static func entries(_ rows: [Value], table: String, file: String) throws -> [SeedData.Entry] {
        try rows.enumerated().map { offset, value in
            let location = "\(table) row \(offset + 1)"
            guard case .object(let fields) = value else {
                throw InputError(file: file, location: location, message: "each row must be an object of column values, found \(value.kind)")
            }
            var columns: [String] = []
            var values: [SQLiteValue] = []
            for name in fields.keys.sorted() {
                columns.append(name)
                switch fields[name] ?? .null {
                case .null: values.append(.null)
                case .bool(let bool): values.append(.integer(bool ? 1 : 0))
                case .integer(let int): values.append(.integer(int))
                case .real(let double): values.append(.real(double))
                case .string(let string): values.append(.text(string))
                case .array, .object:
                    throw InputError(file: file, location: location, message: "column '\(name)' holds \(fields[name]?.kind ?? "a value"); only null, booleans, numbers and strings can be stored")
                }
            }
            return SeedData.Entry(row: Row(columns: columns, values: values), location: location)
        }
    }

    // MARK: - Syntax error positions

    /// Foundation's parser reports a byte offset ("around character 25");
    /// turn it into `line L, column C`.
    static func location(ofSyntaxErrorIn data: Data) -> String? {
        guard let offset = syntaxErrorOffset(in: data) else { return nil }
        var line = 1
        var column = 1
        for byte in data.prefix(offset) {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                // Count characters, not UTF-8 continuation bytes.
                column += 1
            }
        }
        return "line \(line), column \(column)"
    }

    /// Foundation's error for malformed JSON, if the data is malformed.
    private static func syntaxError(in data: Data) -> NSError? {
        do {
            _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            return nil
        } catch {
            return error as NSError
        }
    }

    /// Where Foundation found malformed JSON, as a byte offset.
    private static func syntaxErrorOffset(in data: Data) -> Int? {
        guard let error = syntaxError(in: data) else { return nil }
        if let index = error.userInfo["NSJSONSerializationErrorIndex"] as? Int { return index }
        let text = (error.userInfo[NSDebugDescriptionErrorKey] as? String) ?? error.localizedDescription
        // "... around character 25." / "... around line 3, column 5."
        guard let range = text.range(of: "character ") else { return nil }
        return Int(text[range.upperBound...].prefix { $0.isNumber })
    }

    /// Why the data is not JSON, with the line and column.
    static func reason(ofSyntaxErrorIn data: Data) -> String {
        if data.isEmpty { return "the file is empty" }
        if String(data: data, encoding: .utf8) == nil { return "the file is not UTF-8 text" }
        guard let error = syntaxError(in: data) else { return "not a JSON document" }
        let text = (error.userInfo[NSDebugDescriptionErrorKey] as? String) ?? error.localizedDescription
        // Drop Foundation's own position text: ours is in the location.
        if let range = text.range(of: " around ") { return String(text[..<range.lowerBound]).lowercased() }
        return text.hasSuffix(".") ? String(text.dropLast()) : text
    }
}
