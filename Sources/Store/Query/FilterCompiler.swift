/// Turns a `Filter` into an SQL expression with parameters, checking every
/// column against the table. Identifiers come from the schema; values are
/// always parameters.
struct FilterCompiler {
    let table: TableInfo
    let source: String?
    /// Where relationship paths find other tables (nil: paths are refused).
    let schema: SchemaLookup?
    /// This table's alias inside a relationship subquery; nil for the queried table.
    let alias: String?
    let context: Context
    var arguments: [SQLiteValue] = []

    /// Shared by the compilers of one filter: alias numbering, tables read.
    final class Context {
        var aliases = 0
        var dependencies = Set<String>()
        /// The related tables the queried table's own subqueries read.
        var links = Set<RelationshipLink>()
        /// Whether a subquery reads a table through another related table (a path of two hops, or a nested quantifier).
        var hasIndirectLinks = false
        /// Whether the query reads one row by its rowid: then a MATCH looks
        /// that row up in the index instead of listing every match.
        var oneRow = false
    }

    init(table: TableInfo, source: String?, schema: SchemaLookup? = nil, alias: String? = nil, context: Context = Context()) {
        self.table = table
        self.source = source
        self.schema = schema
        self.alias = alias
        self.context = context
    }

    /// SQL and arguments for a filter, and the other tables its relationship paths read.
    /// `links` is nil when a path reads a table through another related table.
    static func compile(_ filter: Filter, table: TableInfo, schema: SchemaLookup? = nil, oneRow: Bool = false)
        throws -> (sql: String, arguments: [SQLiteValue], dependencies: Set<String>, links: Set<RelationshipLink>?) {
        var compiler = FilterCompiler(table: table, source: filter.source, schema: schema)
        compiler.context.oneRow = oneRow
        let sql = try compiler.sql(filter.resolvedPredicate)
        return (sql, compiler.arguments, compiler.context.dependencies, compiler.context.hasIndirectLinks ? nil : compiler.context.links)
    }

    /// A column of this table as SQL: qualified by the alias inside a subquery.
    func columnSQL(_ name: String) -> String {
        // The queried table's rowid qualified: a relevance ordering joins another table.
        if alias == nil, name.lowercased() == "rowid" { return quoteIdentifier(table.name) + ".rowid" }
        return alias.map { "\($0).\(quoteIdentifier(name))" } ?? quoteIdentifier(name)
    }

    /// A column of this table as a subquery refers to it (by alias, or by the table's name).
    private func outerColumnSQL(_ name: String) -> String {
        "\(alias ?? quoteIdentifier(table.name)).\(quoteIdentifier(name))"
    }

    mutating func sql(_ predicate: Predicate) throws -> String {
        if predicate.isLeaf, let (relationship, position) = try toManyPath(in: predicate) {
            // A path through a to-many relationship without a quantifier: ANY, as in Realm.
            return try quantified(.any, predicate, relationship: relationship, position: position)
        }
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
            let column = try operand(lhs, lowered: caseInsensitive)
            // GLOB reads text up to its first NUL; text past one is compared
            // by position (instr) or as stored bytes (CAST AS BLOB gives a
            // column's and a parameter's text in the database's encoding).
            let hasNUL = text.utf8.contains(0)
            switch op {
            case .contains where !text.isEmpty:
                arguments.append(.text(text))
                return "instr(\(column), ?) > 0"
            case .endsWith where !text.isEmpty, .beginsWith where hasNUL:
                arguments += [.text(text), .text(text)]
                let start = op == .beginsWith ? "1, " : "-"
                return "substr(CAST(\(column) AS BLOB), \(start)length(CAST(? AS BLOB))) = CAST(? AS BLOB)"
            default:
                break
            }
            let pattern: String
            switch op {
            case .beginsWith: pattern = Self.escapeGlob(text) + "*"
            case .endsWith: pattern = "*" + Self.escapeGlob(text)
            case .contains: pattern = "*" + Self.escapeGlob(text) + "*"
            case .like: pattern = text.replacingOccurrences(of: "[", with: "[[]")
            }
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

        case .match(let column, let query, let position):
            return try matchSQL(column: column, query: query, position: position)

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

        case .quantified(let quantifier, let inner):
            guard let (relationship, position) = try toManyPath(in: inner) else {
                var path: (String, Int?)?
                inner.forEachOperand { if path == nil, case .column(let name, let position) = $0, name.contains(".") { path = (name, position) } }
                guard let (name, position) = path else {
                    throw StoreError(code: .invalidQuery, message: "\(quantifier.rawValue) needs a path through a to-many relationship, as in ANY contents.weight > 1000")
                }
                let first = name.split(separator: ".").first.map(String.init) ?? name
                throw failure("\(quantifier.rawValue) needs a to-many relationship; '\(first)' is to-one (compare \(name) directly)",
                              position: position, code: .invalidQuery)
            }
            return try quantified(quantifier, inner, relationship: relationship, position: position)

        case .counted(let inner, let op, let value):
            guard let (relationship, position) = try toManyPath(in: inner) else {
                var path: (String, Int?)?
                inner.forEachOperand { if path == nil, case .column(let name, let position) = $0, name.contains(".") { path = (name, position) } }
                guard let (name, position) = path else {
                    throw StoreError(code: .invalidQuery, message: "SUBQUERY needs a predicate on the related rows' columns, as in SUBQUERY(contents, $c, $c.weight > 1000).@count > 0")
                }
                let first = name.split(separator: ".").first.map(String.init) ?? name
                throw failure("SUBQUERY needs a to-many relationship; '\(first)' is to-one (compare \(name) directly)",
                              position: position, code: .invalidQuery)
            }
            // Compared with 0 or 1 as "some" or "none": EXISTS, which stops at the first row.
            if case .value(.integer(let count)) = value, let quantifier = Self.existence(op, count) {
                return try quantified(quantifier, inner, relationship: relationship, position: position, construct: "SUBQUERY")
            }
            let (rows, condition) = try related(inner, through: relationship, position: position, construct: "SUBQUERY")
            // count(*) is never NULL: plain SQL comparison.
            let sqlOperator = op == .equal ? "=" : op.rawValue
            return "(SELECT count(*) \(rows) AND (\(condition))) \(sqlOperator) \(try operand(value, lowered: false))"
        }
    }

    /// The quantifier that means "the count compared with `count`", when there is one.
    private static func existence(_ op: ComparisonOperator, _ count: Int64) -> Quantifier? {
        switch (op, count) {
        case (.greater, 0), (.greaterOrEqual, 1), (.notEqual, 0): return .any
        case (.equal, 0), (.less, 1), (.lessOrEqual, 0): return Quantifier.none
        default: return nil
        }
    }

    // MARK: - Relationships

    /// The first path in a predicate that goes through a to-many relationship (and is not an aggregate such as `@count`).
    private func toManyPath(in predicate: Predicate) throws -> (String, Int?)? {
        var found: (String, Int?)?
        var failure: Error?
        predicate.forEachOperand { operand in
            guard found == nil, failure == nil, case .column(let name, let position) = operand, name.contains(".") else { return }
            let segments = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard segments.count > 1, !segments[1].hasPrefix("@") else { return }
            do {
                if case .toMany = try relationship(segments[0], position: position) { found = (segments[0], position) }
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return found
    }

    private func relationship(_ name: String, position: Int?) throws -> Relationship {
        guard let schema else {
            throw failure("relationship paths such as '\(name).…' cannot be used here", position: position, code: .invalidQuery)
        }
        do {
            return try Relationship.resolve(name, from: table, schema: schema)
        } catch let error as StoreError {
            throw failure(error.message, position: position, code: error.code)
        }
    }

    /// A compiler for a related table inside a subquery, with a fresh alias;
    /// the subquery correlates on `table.relatedColumn = self.ownColumn`.
    private func child(_ table: TableInfo, relatedColumn: String, ownColumn: String) -> FilterCompiler {
        context.aliases += 1
        context.dependencies.insert(table.name)
        if alias == nil {
            context.links.insert(RelationshipLink(table: table.name, relatedColumn: relatedColumn, mainColumn: ownColumn))
        } else {
            context.hasIndirectLinks = true
        }
        return FilterCompiler(table: table, source: source, schema: schema, alias: "_sluice_r\(context.aliases)", context: context)
    }

    /// `EXISTS (SELECT 1 FROM child WHERE <key matches> AND <predicate on the child's rows>)`, or its ALL / NONE forms.
    private mutating func quantified(_ quantifier: Quantifier, _ predicate: Predicate, relationship name: String, position: Int?,
                                     construct: String? = nil) throws -> String {
        let (rows, condition) = try related(predicate, through: name, position: position, construct: construct ?? quantifier.rawValue)
        switch quantifier {
        case .any: return "EXISTS (SELECT 1 \(rows) AND (\(condition)))"
        case .all: return "NOT EXISTS (SELECT 1 \(rows) AND NOT IFNULL((\(condition)), 0))"
        case .none: return "NOT EXISTS (SELECT 1 \(rows) AND (\(condition)))"
        }
    }

    /// A predicate on a to-many relationship's rows: `FROM child AS alias
    /// WHERE <key matches>` and the predicate on the child's columns.
    /// `construct` (`ANY`, `SUBQUERY`) names it in errors.
    private mutating func related(_ predicate: Predicate, through name: String, position: Int?, construct: String) throws -> (rows: String, condition: String) {
        let context = construct == "SUBQUERY" ? "SUBQUERY(\(name), ...)" : "\(construct) \(name)..."
        guard case .toMany(let childTable, let column, let parentColumn) = try relationship(name, position: position) else {
            throw failure("\(construct) needs a to-many relationship; '\(name)' is to-one (compare \(name).column directly)",
                          position: position, code: .invalidQuery)
        }
        var inner = child(childTable, relatedColumn: column, ownColumn: parentColumn)
        var outerColumn: (String, Int?)?
        let rewritten = predicate.mapOperands { operand in
            guard case .column(let path, let position) = operand else { return operand }
            let segments = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard segments.count > 1, segments[0] == name else {
                outerColumn = outerColumn ?? (path, position)
                return operand
            }
            return .column(segments.dropFirst().joined(separator: "."), position: position)
        }
        if let (column, position) = outerColumn {
            throw failure("in \(context), compare the related rows' columns with values, not '\(column)'",
                          position: position, code: .invalidQuery)
        }
        let condition = try inner.sql(rewritten)
        arguments += inner.arguments
        let rows = "FROM \(quoteIdentifier(childTable.name)) AS \(inner.alias ?? "") WHERE \(inner.columnSQL(column)) = \(outerColumnSQL(parentColumn))"
        return (rows, condition)
    }

    /// A path as a scalar subquery: a to-one hop then the rest of the path,
    /// or a to-many aggregate (`@count`, `@sum.x`, `@avg.x`, `@min.x`, `@max.x`).
    private mutating func pathSQL(_ path: String, position: Int?) throws -> String {
        let segments = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard segments.count > 1, segments.allSatisfy({ !$0.isEmpty }) else {
            throw failure("'\(path)' is not a column or a relationship path", position: position, code: .invalidQuery)
        }
        let rest = segments.dropFirst().joined(separator: ".")
        switch try relationship(segments[0], position: position) {
        case .toOne(let column, let target, let targetColumn):
            var inner = child(target, relatedColumn: targetColumn, ownColumn: column)
            let value = try inner.operand(.column(rest, position: position), lowered: false)
            arguments += inner.arguments
            return "(SELECT \(value) FROM \(quoteIdentifier(target.name)) AS \(inner.alias ?? "") WHERE \(inner.columnSQL(targetColumn)) = \(outerColumnSQL(column)))"
        case .toMany(let childTable, let column, let parentColumn):
            let inner = child(childTable, relatedColumn: column, ownColumn: parentColumn)
            let function = segments[1].lowercased()
            let expression: String
            switch function {
            case "@count" where segments.count == 2:
                expression = "count(*)"
            case "@sum", "@avg", "@min", "@max":
                guard segments.count == 3, let aggregated = childTable.column(named: segments[2]) else {
                    let named = segments.count == 3 ? "unknown column '\(segments[2])' in table \(childTable.name) (columns: \(childTable.columnNames.joined(separator: ", ")))"
                                                    : "\(segments[1]) needs a column after it, as in \(segments[0]).\(segments[1]).weight"
                    throw failure(named, position: position, code: segments.count == 3 ? .unknownColumn : .invalidQuery)
                }
                let value = inner.columnSQL(aggregated.name)
                switch function {
                case "@sum": expression = "IFNULL(sum(\(value)), 0)"   // 0 for no rows, as Realm's @sum
                case "@avg": expression = "avg(\(value))"
                case "@min": expression = "min(\(value))"
                default: expression = "max(\(value))"
                }
            default:
                throw failure("'\(segments[0])' is a to-many relationship: use ANY/ALL/NONE \(path) ..., or \(segments[0]).@count, "
                              + "@sum, @avg, @min, @max", position: position, code: .invalidQuery)
            }
            return "(SELECT \(expression) FROM \(quoteIdentifier(childTable.name)) AS \(inner.alias ?? "") WHERE \(inner.columnSQL(column)) = \(outerColumnSQL(parentColumn)))"
        }
    }

    private mutating func operand(_ operand: Operand, lowered: Bool) throws -> String {
        switch operand {
        case .column(let name, let position):
            if name.contains("."), table.column(named: name) == nil {
                let path = try pathSQL(name, position: position)
                return lowered ? "sluice_lower(\(path))" : path
            }
            guard let column = table.column(named: name) else {
                let message = "unknown column '\(name)' in table \(table.name) (columns: \(table.columnNames.joined(separator: ", ")))"
                throw failure(message, position: position, code: .unknownColumn)
            }
            let quoted = columnSQL(column.name)
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

    func failure(_ message: String, at operand: Operand) -> StoreError {
        switch operand {
        case .column(_, let position), .argument(_, let position):
            return failure(message, position: position, code: .invalidQuery)
        case .value:
            return failure(message, position: nil, code: .invalidQuery)
        }
    }

    func failure(_ message: String, position: Int?, code: StoreError.Code) -> StoreError {
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

extension Predicate {
    /// A comparison of operands (no AND, OR, NOT or quantifier inside).
    var isLeaf: Bool {
        switch self {
        case .comparison, .string, .isNull, .in, .between: return true
        case .and, .or, .not, .constant, .quantified, .counted, .match: return false
        }
    }
}
