/// Turns a `Filter` into an SQL expression with parameters, checking every
/// column against the table. Identifiers come from the schema; values are
/// always parameters.
struct FilterCompiler {
    let table: TableInfo
    let source: String?
    private(set) var arguments: [SQLiteValue] = []

    init(table: TableInfo, source: String?) {
        self.table = table
        self.source = source
    }

    /// SQL and arguments for a filter.
    static func compile(_ filter: Filter, table: TableInfo) throws -> (sql: String, arguments: [SQLiteValue]) {
        var compiler = FilterCompiler(table: table, source: filter.source)
        let sql = try compiler.sql(filter.resolvedPredicate)
        return (sql, compiler.arguments)
    }

    mutating func sql(_ predicate: Predicate) throws -> String {
        switch predicate {
        case .comparison(let lhs, let op, let rhs, let caseInsensitive):
            try checkComparable(lhs, [rhs])
            let sqlOperator: String
            switch op {
            case .equal: sqlOperator = "IS"
            case .notEqual: sqlOperator = "IS NOT"
            default: sqlOperator = op.rawValue
            }
            return "\(try operand(lhs, lowered: caseInsensitive)) \(sqlOperator) \(try operand(rhs, lowered: caseInsensitive))"

        case .string(let lhs, let op, let rhs, let caseInsensitive):
            guard case .value(.text(var text)) = rhs else {
                throw failure("\(op.rawValue) needs a text value on its right", at: rhs)
            }
            if caseInsensitive { text = text.lowercased() }
            let pattern: String
            switch op {
            case .beginsWith: pattern = Self.escapeGlob(text) + "*"
            case .endsWith: pattern = "*" + Self.escapeGlob(text)
            case .contains: pattern = "*" + Self.escapeGlob(text) + "*"
            case .like: pattern = text.replacingOccurrences(of: "[", with: "[[]")
            }
            let column = try operand(lhs, lowered: caseInsensitive)
            arguments.append(.text(pattern))
            return "\(column) GLOB ?"

        case .isNull(let value, let negated):
            return "\(try operand(value, lowered: false)) IS \(negated ? "NOT " : "")NULL"

        case .in(let value, let list, let negated):
            try checkComparable(value, list)
            let lhs = try operand(value, lowered: false)
            let items = try list.map { try operand($0, lowered: false) }.joined(separator: ", ")
            let expression = "\(lhs) IN (\(items))"
            return negated ? "NOT IFNULL(\(expression), 0)" : expression

        case .between(let value, let low, let high, let negated):
            try checkComparable(value, [low, high])
            let expression = "\(try operand(value, lowered: false)) BETWEEN \(try operand(low, lowered: false)) AND \(try operand(high, lowered: false))"
            return negated ? "NOT IFNULL(\(expression), 0)" : expression

        case .and(let lhs, let rhs):
            return "(\(try sql(lhs)) AND \(try sql(rhs)))"

        case .or(let lhs, let rhs):
            return "(\(try sql(lhs)) OR \(try sql(rhs)))"

        case .not(let inner):
            // Realm's two-valued logic: a comparison with NULL is false, so its
            // negation is true. SQL would make both NULL.
            return "NOT IFNULL(\(try sql(inner)), 0)"

        case .constant(let value):
            return value ? "1" : "0"
        }
    }

    private mutating func operand(_ operand: Operand, lowered: Bool) throws -> String {
        switch operand {
        case .column(let name, let position):
            guard let column = table.column(named: name) else {
                let message = "unknown column '\(name)' in table \(table.name) (columns: \(table.columnNames.joined(separator: ", ")))"
                throw failure(message, position: position, code: .unknownColumn)
            }
            let quoted = quoteIdentifier(column.name)
            return lowered ? "sluice_lower(\(quoted))" : quoted
        case .value(let value):
            if lowered, case .text(let text) = value {
                arguments.append(.text(text.lowercased()))
            } else {
                arguments.append(value)
            }
            return "?"
        case .argument(let index, let position):
            throw failure("argument $\(index) has no value", position: position, code: .invalidQuery)
        }
    }

    /// Refuses comparing an INTEGER or REAL column with text that is not a
    /// number (`age > 'thirty'`): SQLite would compare storage classes and
    /// quietly match nothing (or everything). Text that reads as a number
    /// (`age > '30'`) is converted by the column's affinity, as SQLite does.
    private func checkComparable(_ subject: Operand, _ others: [Operand]) throws {
        let pairs: [(Operand, Operand)] = others.map { (subject, $0) } + others.map { ($0, subject) }
        for case (.column(let name, let position), .value(.text(let text))) in pairs {
            guard let column = table.column(named: name), [.integer, .real].contains(column.affinity),
                  Double(text.trimmingCharacters(in: .whitespaces)) == nil else { continue }
            throw failure("cannot compare the \(column.affinity == .integer ? "integer" : "real") column '\(column.name)' with the text '\(text)'; "
                          + "write a number (\(column.name) > 30), or compare a text column", position: position, code: .invalidQuery)
        }
    }

    /// Escapes GLOB's wildcards so the text matches literally.
    static func escapeGlob(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "*": escaped += "[*]"
            case "?": escaped += "[?]"
            case "[": escaped += "[[]"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    private func failure(_ message: String, at operand: Operand) -> StoreError {
        switch operand {
        case .column(_, let position), .argument(_, let position):
            return failure(message, position: position, code: .invalidQuery)
        case .value:
            return failure(message, position: nil, code: .invalidQuery)
        }
    }

    private func failure(_ message: String, position: Int?, code: StoreError.Code) -> StoreError {
        var error: StoreError
        if let source, let position {
            error = QueryParser.error(message, in: source, at: position)
        } else {
            error = StoreError(code: code, message: message)
        }
        error.code = code
        return error
    }
}
