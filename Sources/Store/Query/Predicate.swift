/// The syntax tree of a filter, built by the query-string parser or by the
/// typed operators on `Column`.
public indirect enum Predicate: Sendable, Hashable {
    /// `lhs op rhs`; `caseInsensitive` is the `[c]` modifier.
    case comparison(Operand, ComparisonOperator, Operand, caseInsensitive: Bool)
    /// A string operator (`BEGINSWITH`, `ENDSWITH`, `CONTAINS`, `LIKE`).
    case string(Operand, StringOperator, Operand, caseInsensitive: Bool)
    /// `operand IS NULL`, or `IS NOT NULL` when negated.
    case isNull(Operand, negated: Bool)
    /// `operand IN (values)`, or `NOT IN` when negated.
    case `in`(Operand, [Operand], negated: Bool)
    /// `operand BETWEEN low AND high` (inclusive), or `NOT BETWEEN`.
    case between(Operand, Operand, Operand, negated: Bool)
    /// Both hold.
    case and(Predicate, Predicate)
    /// Either holds.
    case or(Predicate, Predicate)
    /// The predicate does not hold (a NULL comparison counts as not holding, as in Realm).
    case not(Predicate)
    /// `TRUEPREDICATE` / `FALSEPREDICATE`.
    case constant(Bool)
    /// `ANY`, `ALL` or `NONE` of the related rows of a to-many relationship
    /// match: the predicate compares a path through it (`ANY contents.weight > 1000`).
    case quantified(Quantifier, Predicate)
    /// How many rows of a to-many relationship match a predicate (whose
    /// paths go through it, as a quantified one's do), compared with a value:
    /// NSPredicate's `SUBQUERY(contents, $c, $c.weight > 1000).@count > 2`.
    case counted(Predicate, ComparisonOperator, Operand)
    /// The row matches a full-text query (FTS5's syntax) in the table's
    /// full-text index (`FullTextIndex`), in every indexed column or in one
    /// (`column`); `position` is the query text's offset in the query string.
    case match(Operand?, Operand, position: Int?)
}

/// Which of a to-many relationship's rows must match.
public enum Quantifier: String, Sendable, Hashable {
    /// At least one (also what a path through a to-many relationship means without a quantifier).
    case any = "ANY"
    /// Every one (true when there are none).
    case all = "ALL"
    /// None.
    case none = "NONE"
}

/// One side of a comparison.
public enum Operand: Sendable, Hashable {
    /// A column of the queried table; `position` is its offset in the query
    /// string. A dotted name is a relationship path: `recipient.city` (to
    /// one), `contents.@count`, `contents.@sum.weight` (`@avg`, `@min`,
    /// `@max`) and, inside a quantified predicate, `contents.weight`.
    case column(String, position: Int?)
    /// A literal value.
    case value(SQLiteValue)
    /// A positional argument (`$0`, `?`), resolved when the filter is compiled.
    case argument(Int, position: Int?)
}

/// `==`, `!=`, `<`, `<=`, `>`, `>=`.
public enum ComparisonOperator: String, Sendable, Hashable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
}

/// The string operators of the query language.
public enum StringOperator: String, Sendable, Hashable {
    case beginsWith = "BEGINSWITH"
    case endsWith = "ENDSWITH"
    case contains = "CONTAINS"
    /// Realm's LIKE: `*` matches any run of characters, `?` one character.
    case like = "LIKE"
}
