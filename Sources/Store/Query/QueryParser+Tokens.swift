

/// The query language's tokens: keywords, operators, and the lexer that reads them.
extension QueryParser {

    static let comparisonOperators: [String: ComparisonOperator] = [
        "=": .equal, "==": .equal, "!=": .notEqual, "<>": .notEqual,
        "<": .less, "<=": .lessOrEqual, "=<": .lessOrEqual,
        ">": .greater, ">=": .greaterOrEqual, "=>": .greaterOrEqual,
    ]

    static let quantifiers: [String: Quantifier] = ["ANY": .any, "SOME": .any, "ALL": .all, "NONE": .none]

    static let keywords: Set<String> = [
        "AND", "OR", "NOT", "IN", "BETWEEN", "LIKE", "BEGINSWITH", "ENDSWITH", "CONTAINS",
        "IS", "NULL", "NIL", "TRUE", "FALSE", "YES", "NO", "TRUEPREDICATE", "FALSEPREDICATE",
    ]

    static func isKeyword(_ word: String) -> Bool { keywords.contains(word.uppercased()) }

    func isKeyword(_ keyword: String) -> Bool {
        if case .identifier(let word) = token { return word.uppercased() == keyword }
        return false
    }

    func describe(_ token: Token) -> String {
        switch token {
        case .identifier(let name): return "'\(name)'"
        case .quotedIdentifier(let name): return "`\(name)`"
        case .number(let value): return "the number \(value)"
        case .string(let text): return "the string '\(text)'"
        case .argument(let index): return index.map { "the argument $\($0)" } ?? "the argument ?"
        case .variable(let name): return "$\(name)"
        case .symbol(let symbol): return "'\(symbol)'"
        case .end: return "the end of the query"
        }
    }

    mutating func advance() throws {
        while index < characters.count, characters[index].isWhitespace { index += 1 }
        tokenStart = index
        guard index < characters.count else { token = .end; return }
        let character = characters[index]
        if character.isLetter || character == "_" {
            token = .identifier(lexName())
        } else if character == "$", let next = peek(1), next.isLetter || next == "_" {
            index += 1
            token = .variable(lexName())
        } else if character.isASCII && character.isNumber || (character == "." && peek(1)?.isASCII == true && peek(1)?.isNumber == true) {
            token = .number(try lexNumber())
        } else if character == "'" || character == "\"" {
            token = .string(try lexString(quote: character))
        } else if character == "`" {
            token = .quotedIdentifier(try lexQuotedIdentifier())
        } else if character == "$" {
            index += 1
            var digits = ""
            while index < characters.count, characters[index].isASCII, characters[index].isNumber { digits.append(characters[index]); index += 1 }
            guard let number = Int(digits), digits.count < 6 else { throw error("expected an argument number after '$', as in $0", at: tokenStart) }
            token = .argument(number)
        } else if character == "?" {
            index += 1
            token = .argument(nil)
        } else {
            let two = peek(1).map { String([character, $0]) }
            if let two, ["==", "!=", "<>", "<=", ">=", "=<", "=>", "&&", "||"].contains(two) {
                index += 2
                token = .symbol(two)
            } else if "()[]{},=<>!-".contains(character) {
                index += 1
                token = .symbol(String(character))
            } else {
                throw error("unexpected character '\(character)'", at: index)
            }
        }
    }

    /// The first character after spaces from the current position.
    func peekNonSpace() -> Character? {
        characters[index...].first { !$0.isWhitespace }
    }

    /// A word, or a dotted relationship path (`recipient.city`, `contents.@count`).
    mutating func lexName() -> String {
        var name = ""
        while index < characters.count, characters[index].isLetter || characters[index].isNumber || characters[index] == "_" {
            name.append(characters[index]); index += 1
            // `package_content(package_id).`: one foreign key of a table with several.
            if index < characters.count, characters[index] == "(", let close = characters[index...].firstIndex(of: ")"),
               close > index + 1, close + 1 < characters.count, characters[close + 1] == ".",
               characters[(index + 1)..<close].allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) {
                name += String(characters[index...close]); index = close + 1
            }
            // A relationship path: `recipient.city`, `contents.@count`, `contents.@sum.weight`.
            if index + 1 < characters.count, characters[index] == ".",
               characters[index + 1].isLetter || characters[index + 1] == "_" || characters[index + 1] == "@" {
                name.append("."); index += 1
                if characters[index] == "@" { name.append("@"); index += 1 }
            }
        }
        return name
    }

    func peek(_ offset: Int) -> Character? {
        index + offset < characters.count ? characters[index + offset] : nil
    }

    mutating func lexNumber() throws -> SQLiteValue {
        let start = index
        var text = ""
        var isReal = false
        while index < characters.count {
            let c = characters[index]
            if c.isASCII && c.isNumber {
                text.append(c)
            } else if c == "." && !isReal {
                isReal = true; text.append(c)
            } else if (c == "e" || c == "E"), let next = peek(1),
                      next.isNumber || ((next == "+" || next == "-") && peek(2)?.isNumber == true) {
                isReal = true
                text.append(c); text.append(next); index += 1
            } else {
                break
            }
            index += 1
        }
        if index < characters.count, characters[index].isLetter || characters[index] == "_" {
            throw error("malformed number '\(text)\(characters[index])'", at: start)
        }
        if !isReal, let int = Int64(text) { return .integer(int) }
        guard let double = Double(text) else { throw error("malformed number '\(text)'", at: start) }
        return .real(double)
    }

    /// `` `first name` `` (a doubled backtick stands for one).
    mutating func lexQuotedIdentifier() throws -> String {
        let start = index
        index += 1
        var name = ""
        while index < characters.count {
            if characters[index] == "`" {
                if peek(1) == "`" { name.append("`"); index += 2; continue }
                index += 1
                guard !name.isEmpty else { throw error("empty column name in backticks", at: start) }
                return name
            }
            name.append(characters[index])
            index += 1
        }
        throw error("unterminated column name: no closing `", at: start)
    }

    mutating func lexString(quote: Character) throws -> String {
        let start = index
        index += 1
        var text = ""
        while index < characters.count {
            let c = characters[index]
            if c == quote {
                // SQL's doubled quote: 'O''Brien'.
                if peek(1) == quote { text.append(quote); index += 2; continue }
                index += 1
                return text
            }
            if c == "\\" {
                guard let next = peek(1) else { break }
                switch next {
                case "n": text.append("\n")
                case "t": text.append("\t")
                case "r": text.append("\r")
                case "0": text.append("\0")
                case "\\", "'", "\"": text.append(next)
                default: throw error("unknown escape '\\\(next)' in string", at: index)
                }
                index += 2
            } else {
                text.append(c)
                index += 1
            }
        }
        throw error("unterminated string: no closing \(quote)", at: start)
    }
}
