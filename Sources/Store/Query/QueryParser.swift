/// Parses query strings (filters and orderings) into syntax trees.
///
/// A hand-written recursive-descent parser: the grammar is small and the
/// error messages must point at the exact character at fault.
struct QueryParser {
    enum Token: Equatable {
        case identifier(String)
        /// `` `first name` ``: a column name that is not a plain word (never a keyword).
        case quotedIdentifier(String)
        case number(SQLiteValue)
        case string(String)
        case argument(Int?)     // `$N`, or `?` (numbered in turn)
        /// `$c` or `$c.weight`: a SUBQUERY's variable, or a path from it.
        case variable(String)
        case symbol(String)     // ( ) { } , == != < <= > >= && || ! [c]
        case end
    }

    let source: String
    let characters: [Character]
    var index = 0
    var token: Token = .end
    var tokenStart = 0
    var nextSequentialArgument = 0
    /// The variables of the SUBQUERYs being parsed, each with its relationship.
    private var variables: [String: String] = [:]

    init(_ source: String) {
        self.source = source
        self.characters = Array(source)
    }

    // MARK: - Entry points

    mutating func parse() throws -> Predicate {
        try advance()
        if token == .end { throw error("the query is empty") }
        let predicate = try parseOr()
        guard token == .end else { throw error("expected AND, OR or the end of the query, found \(describe(token))") }
        return predicate
    }

    mutating func parseOrdering() throws -> [Ordering] {
        try advance()
        if token == .end { throw error("the ordering is empty; expected a column name") }
        var orderings: [Ordering] = []
        while true {
            let name: String
            switch token {
            case .identifier(let word) where !Self.isKeyword(word): name = word
            case .quotedIdentifier(let quoted): name = quoted
            default: throw error("expected a column name, found \(describe(token))")
            }
            let position = tokenStart
            try advance()
            var descending = false
            if case .identifier(let word) = token, ["ASC", "DESC"].contains(word.uppercased()) {
                descending = word.uppercased() == "DESC"
                try advance()
            }
            orderings.append(Ordering(column: name, descending: descending, position: position, source: source))
            if token == .end { return orderings }
            guard token == .symbol(",") else { throw error("expected ',' or the end, found \(describe(token))") }
            try advance()
        }
    }

    // MARK: - Grammar

    private mutating func parseOr() throws -> Predicate {
        var lhs = try parseAnd()
        while isKeyword("OR") || token == .symbol("||") {
            try advance()
            lhs = .or(lhs, try parseAnd())
        }
        return lhs
    }

    private mutating func parseAnd() throws -> Predicate {
        var lhs = try parseNot()
        while isKeyword("AND") || token == .symbol("&&") {
            try advance()
            lhs = .and(lhs, try parseNot())
        }
        return lhs
    }

    private mutating func parseNot() throws -> Predicate {
        if isKeyword("NOT") || token == .symbol("!") {
            try advance()
            return .not(try parseNot())
        }
        return try parsePrimary()
    }

    private mutating func parsePrimary() throws -> Predicate {
        if token == .symbol("(") {
            try advance()
            let inner = try parseOr()
            guard token == .symbol(")") else { throw error("expected ')', found \(describe(token))") }
            try advance()
            return inner
        }
        if isKeyword("SUBQUERY"), peekNonSpace() == "(" { return try parseSubquery() }
        if isKeyword("TRUEPREDICATE") { try advance(); return .constant(true) }
        // `MATCH 'oslo zo*'`: the whole full-text index (a column may be called "match").
        if isKeyword("MATCH"), let next = peekNonSpace(), ["'", "\"", "$", "?"].contains(next) {
            try advance()
            return try parseMatch(column: nil)
        }
        if isKeyword("FALSEPREDICATE") { try advance(); return .constant(false) }
        // `ANY contents.weight > 1000`: a quantifier, when a path follows (a column may be called "any").
        if case .identifier(let word) = token, let quantifier = Self.quantifiers[word.uppercased()] {
            let saved = (index, token, tokenStart)
            try advance()
            if case .identifier(let path) = token, path.contains(".") {
                let position = tokenStart
                let lhs = try parseOperand(after: nil)
                guard case .column(let name, _) = lhs, !name.split(separator: ".").dropFirst().contains(where: { $0.hasPrefix("@") }) else {
                    throw error("\(word.uppercased()) needs a path to a related column, as in ANY contents.weight > 1000", at: position)
                }
                return .quantified(quantifier, try parseComparison(lhs))
            }
            (index, token, tokenStart) = saved
        }
        let lhs = try parseOperand(after: nil)
        return try parseComparison(lhs)
    }

    /// `SUBQUERY(contents, $c, $c.weight > 1000 AND $c.title == 'tea').@count > 0`:
    /// how many related rows match, compared. Inside, `$c.weight` is the path
    /// `contents.weight`, so one related row must satisfy all of the predicate.
    private mutating func parseSubquery() throws -> Predicate {
        let example = "as in SUBQUERY(contents, $c, $c.weight > 1000).@count > 0"
        try advance()
        guard token == .symbol("(") else { throw error("expected '(' after SUBQUERY, \(example)") }
        try advance()
        guard case .identifier(var relationship) = token, !relationship.contains("."), !Self.isKeyword(relationship) else {
            throw error("expected a to-many relationship after SUBQUERY(, \(example); found \(describe(token))")
        }
        let relationshipPosition = tokenStart
        try advance()
        // `package_content(package_id)`: one foreign key of a table with several.
        if token == .symbol("(") {
            try advance()
            guard case .identifier(let key) = token, !key.contains(".") else { throw error("expected a foreign-key column in the parentheses, found \(describe(token))") }
            try advance()
            guard token == .symbol(")") else { throw error("expected ')' after the foreign-key column, found \(describe(token))") }
            try advance()
            relationship += "(\(key))"
        }
        guard token == .symbol(",") else { throw error("expected ',' after the relationship, \(example); found \(describe(token))") }
        try advance()
        guard case .variable(let variable) = token, !variable.contains(".") else {
            throw error("expected a variable such as $c for the related row, \(example); found \(describe(token))")
        }
        try advance()
        guard token == .symbol(",") else { throw error("expected ',' after $\(variable), \(example); found \(describe(token))") }
        try advance()
        let outer = variables[variable]
        variables[variable] = relationship
        let inner = try parseOr()
        variables[variable] = outer
        guard token == .symbol(")") else { throw error("expected ')' to close the SUBQUERY, found \(describe(token))") }
        // `.@count` follows the parenthesis directly.
        let suffix = Array(".@count")
        guard characters[index...].prefix(suffix.count).map({ Character($0.lowercased()) }) == suffix,
              !(peek(suffix.count).map { $0.isLetter || $0.isNumber || $0 == "_" } ?? false) else {
            throw error("a SUBQUERY is compared by its count: expected .@count after ')', \(example)", at: index)
        }
        index += suffix.count
        try advance()
        guard case .symbol(let symbol) = token, let op = Self.comparisonOperators[symbol] else {
            throw error("expected a comparison after SUBQUERY(...).@count, such as > 0; found \(describe(token))")
        }
        try advance()
        let count = try parseOperand(after: symbol)
        if case .column(let name, _) = count, name.contains(".") {
            throw error("compare SUBQUERY(...).@count with a number", at: relationshipPosition)
        }
        return .counted(inner, op, count)
    }

    private mutating func parseComparison(_ lhs: Operand) throws -> Predicate {
        if case .symbol(let symbol) = token, let op = Self.comparisonOperators[symbol] {
            try advance()
            let caseInsensitive = try parseModifier()
            let rhs = try parseOperand(after: symbol)
            return .comparison(lhs, op, rhs, caseInsensitive: caseInsensitive)
        }
        if isKeyword("IS") {
            try advance()
            var negated = false
            if isKeyword("NOT") { negated = true; try advance() }
            guard isKeyword("NULL") || isKeyword("NIL") else { throw error("expected NULL after IS\(negated ? " NOT" : ""), found \(describe(token))") }
            try advance()
            return .isNull(lhs, negated: negated)
        }
        var negated = false
        if isKeyword("NOT") { negated = true; try advance() }
        if isKeyword("IN") {
            try advance()
            return .in(lhs, try parseList(), negated: negated)
        }
        if isKeyword("BETWEEN") {
            try advance()
            let low: Operand, high: Operand
            if token == .symbol("{") {
                try advance()
                low = try parseOperand(after: "{")
                guard token == .symbol(",") else { throw error("expected ',' between the bounds, found \(describe(token))") }
                try advance()
                high = try parseOperand(after: ",")
                guard token == .symbol("}") else { throw error("expected '}', found \(describe(token))") }
                try advance()
            } else {
                low = try parseOperand(after: "BETWEEN")
                guard isKeyword("AND") else { throw error("expected AND between the bounds, found \(describe(token))") }
                try advance()
                high = try parseOperand(after: "AND")
            }
            return .between(lhs, low, high, negated: negated)
        }
        if isKeyword("MATCH") {
            try advance()
            let predicate = try parseMatch(column: lhs)
            return negated ? .not(predicate) : predicate
        }
        if case .identifier(let word) = token, let op = StringOperator(rawValue: word.uppercased()) {
            try advance()
            let caseInsensitive = try parseModifier()
            let rhs = try parseOperand(after: op.rawValue)
            let predicate = Predicate.string(lhs, op, rhs, caseInsensitive: caseInsensitive)
            return negated ? .not(predicate) : predicate
        }
        if negated { throw error("expected IN, BETWEEN, LIKE, BEGINSWITH, ENDSWITH, CONTAINS or MATCH after NOT, found \(describe(token))") }
        throw error("expected an operator (==, !=, <, <=, >, >=, IN, BETWEEN, LIKE, BEGINSWITH, ENDSWITH, CONTAINS, MATCH, IS NULL), found \(describe(token))")
    }

    /// The full-text query after `MATCH`: a string or an argument. Its
    /// position is the text's first character (after the quote), so that a
    /// caret can point into it.
    private mutating func parseMatch(column: Operand?) throws -> Predicate {
        let start = tokenStart
        var position = start
        if case .string = token { position += 1 }
        let query = try parseOperand(after: "MATCH")
        if case .column = query { throw error("MATCH needs a text query, as in MATCH 'zoe*', not a column", at: start) }
        return .match(column, query, position: position)
    }

    private mutating func parseModifier() throws -> Bool {
        guard token == .symbol("[") else { return false }
        try advance()
        guard case .identifier(let flag) = token else { throw error("expected a modifier such as [c], found \(describe(token))") }
        guard flag.lowercased() == "c" else { throw error("unknown modifier [\(flag)]; only [c] (case-insensitive) is supported") }
        try advance()
        guard token == .symbol("]") else { throw error("expected ']' to close the modifier, found \(describe(token))") }
        try advance()
        return true
    }

    private mutating func parseList() throws -> [Operand] {
        let close: String
        switch token {
        case .symbol("("): close = ")"
        case .symbol("{"): close = "}"
        default: throw error("expected '(' or '{' to start the IN list, found \(describe(token))")
        }
        try advance()
        var operands = [try parseOperand(after: "IN")]
        while token == .symbol(",") {
            try advance()
            operands.append(try parseOperand(after: ","))
        }
        guard token == .symbol(close) else { throw error("expected ',' or '\(close)' in the IN list, found \(describe(token))") }
        try advance()
        return operands
    }

    private mutating func parseOperand(after previous: String?) throws -> Operand {
        let position = tokenStart
        switch token {
        case .identifier(let name):
            switch name.uppercased() {
            case "TRUE", "YES": try advance(); return .value(.integer(1))
            case "FALSE", "NO": try advance(); return .value(.integer(0))
            case "NULL", "NIL": try advance(); return .value(.null)
            default:
                if Self.isKeyword(name) {
                    throw error("expected a column name or a value, found the keyword \(name.uppercased())")
                }
                try advance()
                return .column(name, position: position)
            }
        case .quotedIdentifier(let name):
            try advance()
            return .column(name, position: position)
        case .variable(let path):
            let segments = path.split(separator: ".", maxSplits: 1).map(String.init)
            guard let relationship = variables[segments[0]] else {
                throw error("unknown variable $\(segments[0]): only a SUBQUERY's variable can be used, as $c in SUBQUERY(contents, $c, $c.weight > 1000).@count > 0")
            }
            guard segments.count == 2 else {
                throw error("compare a column of the related row, as in $\(segments[0]).weight, not $\(segments[0]) itself")
            }
            try advance()
            return .column("\(relationship).\(segments[1])", position: position)
        case .number(let value):
            try advance()
            return .value(value)
        case .string(let text):
            try advance()
            return .value(.text(text))
        case .argument(let explicit):
            let number: Int
            if let explicit { number = explicit } else { number = nextSequentialArgument; nextSequentialArgument += 1 }
            try advance()
            return .argument(number, position: position)
        case .symbol("-"):
            // A negative number: `-` directly followed by a number token.
            try advance()
            guard case .number(let value) = token else { throw error("expected a number after '-'") }
            try advance()
            switch value {
            case .integer(let int): return .value(.integer(0 &- int))
            case .real(let double): return .value(.real(-double))
            default: return .value(value)
            }
        case .end:
            throw error(previous.map { "expected a value after '\($0)', found the end of the query" } ?? "expected a column name or a value")
        default:
            throw error("expected a column name or a value, found \(describe(token))")
        }
    }

    // MARK: - Errors

    func error(_ message: String, at position: Int? = nil) -> StoreError {
        Self.error(message, in: source, at: position ?? tokenStart)
    }

    /// An `invalidQuery` error showing the query with a caret under `position`.
    static func error(_ message: String, in source: String, at position: Int) -> StoreError {
        StoreError(code: .invalidQuery, message: message + " (at position \(position + 1))\n" + caretDisplay(source, at: position))
    }

    /// `    age > 'x\n` / `          ^`: the query on one line, then a caret.
    static func caretDisplay(_ source: String, at position: Int) -> String {
        let flat = String(source.map { $0.isNewline ? " " : $0 })
        let clamped = max(0, min(position, flat.count))
        return "    " + flat + "\n    " + String(repeating: " ", count: clamped) + "^"
    }
}
