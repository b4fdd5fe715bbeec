import ArgumentParser
import Foundation
import Store

/// `sluice query`: prints a table's rows, filtered and ordered.
struct Query: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a table's rows, filtered with a query string and ordered.",
        discussion: """
            --where takes Sluice's query language, as Realm's and NSPredicate's: \
            age >= 30 AND (city == 'Oslo' OR city BEGINSWITH[c] 'mü'), last_name IN {'Ng', 'Kim'}, email IS NULL, \
            first_name LIKE 'Zo*', age BETWEEN 18 AND 30, NOT name CONTAINS 'x'. \
            Rows come in the order asked, ties broken by the primary key, compared with SQLite's own collation. \
            The database is opened read-only and never created.
            """)

    @OptionGroup var options: StoreOptions

    @Argument(help: "The table to read.")
    var table: String

    @Option(name: .customLong("where"), help: ArgumentHelp("A filter in Sluice's query language.", valueName: "expr"))
    var filter: String?

    @Option(help: ArgumentHelp("Columns to order by, comma-separated; each may end in ASC or DESC.", valueName: "columns"))
    var order: String?

    @Flag(help: "Reverse the order (descending).")
    var desc = false

    @Option(help: "At most this many rows.")
    var limit: Int?

    @Option(help: "Output format: table, json or csv.")
    var format: RowFormat?

    func validate() throws {
        if let limit, limit < 0 { throw ValidationError("--limit must not be negative, got \(limit)") }
    }

    func run() throws {
        // Parse what the user typed before touching the database.
        let parsedFilter = try filter.map { try Filter($0) }
        var orderings = try order.map { try Ordering.parse($0) } ?? []
        let store = try options.openExisting(readOnly: true)
        let (rows, columns) = try store.read { db in
            let info = try db.tableInfo(table)
            if desc {
                orderings = orderings.isEmpty
                    ? info.primaryKey.map { Ordering($0, descending: true) }
                    : orderings.map(\.reversed)
            }
            let rows = try db.fetchRows(table: info.name, filter: parsedFilter, orderBy: orderings, limit: limit)
            return (rows, info.columnNames)
        }
        print(try (format ?? .table).render(rows, columns: columns))
    }
}
