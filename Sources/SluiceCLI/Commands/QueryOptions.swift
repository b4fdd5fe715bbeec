import ArgumentParser
import Sluice

/// What `query` and `watch` share: a table, a filter and an order.
struct QueryOptions: ParsableArguments {
    /// The argument: the table to read.
    @Argument(help: "The table to read.")
    var table: String

    /// The `--where` option: a filter in Sluice's query language.
    @Option(name: .customLong("where"), help: ArgumentHelp("A filter in Sluice's query language.", valueName: "expr"))
    var filter: String?

    // Unconditional: `--order -age` takes "-age" (descending), which the parser read as an option.
    @Option(parsing: .unconditional,
            help: ArgumentHelp("Columns to order by, comma-separated; each may end in ASC or DESC, or start with - for descending.", valueName: "columns"))
    /// The `--order` option: columns to order by, comma-separated; each may end
    /// in ASC or DESC, or start with - for descending.
    var order: String?

    /// The `--match` option: only rows whose indexed text matches this
    /// full-text query; the most relevant first unless `--order` is given.
    @Option(help: ArgumentHelp("Only rows whose full-text index matches this query (FTS5 syntax: oslo zo*, \"new york\", ana OR bo); most relevant first unless --order is given.",
                               valueName: "query"))
    var match: String?

    /// The `--desc` flag: reverse the order (descending).
    @Flag(help: "Reverse the order (descending).")
    var desc = false

    /// The parsed filter and orderings; checks what the user typed before
    /// the database is touched.
    func parse() throws -> (filter: Filter?, orderings: [Ordering]) {
        var parsed = try filter.map { try Filter($0) }
        var orderings = try order.map { try Ordering.parse(Self.descendingPrefixes($0)) } ?? []
        if let match {
            parsed = parsed.map { $0 && .matching(match) } ?? .matching(match)
            if order == nil { orderings = [.relevance(to: match)] }
        }
        return (parsed, orderings)
    }

    /// `-age,name` → `age DESC,name`: a leading `-` on a column is descending.
    static func descendingPrefixes(_ order: String) -> String {
        order.split(separator: ",", omittingEmptySubsequences: false).map { term in
            let trimmed = term.drop { $0 == " " }
            return trimmed.first == "-" ? trimmed.dropFirst() + " DESC" : String(term)
        }.joined(separator: ",")
    }

    /// The orderings for a table, reversed by `--desc` (the primary key when none is given).
    func orderings(_ parsed: [Ordering], for table: TableInfo) -> [Ordering] {
        guard desc else { return parsed }
        return parsed.isEmpty ? table.primaryKey.map { Ordering($0, descending: true) } : parsed.map(\.reversed)
    }
}
