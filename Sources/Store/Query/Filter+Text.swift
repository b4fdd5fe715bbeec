/// A filter written back as a query string: what travels where a filter must be sent as
/// text (a sync subscription), parsed back there with ``Filter/init(_:arguments:)``.
extension Filter {
    /// The filter as a query string, every value as an argument (`$0`, `$1`, ...): parsing
    /// it with the arguments gives a filter that keeps the same rows.
    ///
    /// ```swift
    /// let filter = Column("recipient.city") == "Oslo" && Column("weight") > 5
    /// filter.queryText()   // ("(recipient.city == $0) AND (weight > $1)", ["Oslo", 5])
    /// ```
    public func queryText() -> (query: String, arguments: [SQLiteValue]) {
        var printer = FilterPrinter()
        let query = printer.text(resolvedPredicate)
        return (query, printer.arguments)
    }
}

/// Writes a predicate in the query language; values become arguments.
private struct FilterPrinter {
    var arguments: [SQLiteValue] = []

    mutating func text(_ predicate: Predicate, variable: (relationship: String, name: String)? = nil) -> String {
        switch predicate {
        case .comparison(let lhs, let op, let rhs, let caseInsensitive):
            return "\(operand(lhs, variable)) \(op.rawValue)\(caseInsensitive ? "[c]" : "") \(operand(rhs, variable))"
        case .string(let lhs, let op, let rhs, let caseInsensitive):
            return "\(operand(lhs, variable)) \(op.rawValue)\(caseInsensitive ? "[c]" : "") \(operand(rhs, variable))"
        case .isNull(let value, let negated):
            return "\(operand(value, variable)) IS \(negated ? "NOT " : "")NULL"
        case .in(let value, let list, let negated):
            let lhs = operand(value, variable)
            let items = list.map { operand($0, variable) }.joined(separator: ", ")
            return "\(lhs) \(negated ? "NOT " : "")IN (\(items))"
        case .between(let value, let low, let high, let negated):
            let lhs = operand(value, variable)
            let bounds = "{\(operand(low, variable)), \(operand(high, variable))}"
            return "\(lhs) \(negated ? "NOT " : "")BETWEEN \(bounds)"
        case .and(let lhs, let rhs):
            return "(\(text(lhs, variable: variable))) AND (\(text(rhs, variable: variable)))"
        case .or(let lhs, let rhs):
            return "(\(text(lhs, variable: variable))) OR (\(text(rhs, variable: variable)))"
        case .not(let inner):
            return "NOT (\(text(inner, variable: variable)))"
        case .constant(let value):
            return value ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case .quantified(let quantifier, let inner):
            return "\(quantifier.rawValue) \(text(inner, variable: variable))"
        case .counted(let inner, let op, let count):
            // Inside, paths start with the relationship: written as the variable's.
            var relationship = ""
            inner.forEachOperand { if relationship.isEmpty, case .column(let name, _) = $0, let dot = name.firstIndex(of: ".") { relationship = String(name[..<dot]) } }
            let name = "v\(arguments.count)"
            let body = text(inner, variable: (relationship, name))
            return "SUBQUERY(\(relationship), $\(name), \(body)).@count \(op.rawValue) \(operand(count, variable))"
        case .match(let column, let query, _):
            let target = column.map { operand($0, variable) + " " } ?? ""
            return "\(target)MATCH \(operand(query, variable))"
        }
    }

    private mutating func operand(_ operand: Operand, _ variable: (relationship: String, name: String)?) -> String {
        switch operand {
        case .column(let name, _):
            if let variable, name.hasPrefix(variable.relationship + ".") {
                return "$" + variable.name + name.dropFirst(variable.relationship.count)
            }
            return Self.identifier(name)
        case .value(let value):
            arguments.append(value)
            return "$\(arguments.count - 1)"
        case .argument(let index, _):
            // Resolved before printing; an argument left means a filter built without its value.
            return "$\(index)"
        }
    }

    /// A column as the lexer reads it: bare when it can be, in backticks otherwise.
    static func identifier(_ name: String) -> String {
        let bare = name.first.map { $0.isLetter || $0 == "_" } == true
            && name.allSatisfy { $0.isLetter || $0.isNumber || "_.@()".contains($0) }
            && !QueryParser.isKeyword(name) && QueryParser.quantifiers[name.uppercased()] == nil
            && !["SUBQUERY", "MATCH"].contains(name.uppercased())
        return bare ? name : "`" + name.replacingOccurrences(of: "`", with: "``") + "`"
    }
}
