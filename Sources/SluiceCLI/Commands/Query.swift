import ArgumentParser
import Foundation
import Sluice

/// `sluice query`: prints a table's rows, filtered and ordered.
struct Query: ParsableCommand {
    /// The command's name, abstract and discussion, as `--help` shows them.
    static let configuration = CommandConfiguration(
        abstract: "Print a table's rows, filtered with a query string and ordered.",
        discussion: """
            --where takes Sluice's query language, as Realm's and NSPredicate's: \
            age >= 30 AND (city == 'Oslo' OR city BEGINSWITH[c] 'mü'), last_name IN {'Ng', 'Kim'}, email IS NULL, \
            first_name LIKE 'Zo*', age BETWEEN 18 AND 30, NOT name CONTAINS 'x'. \
            Rows come in the order asked, ties broken by the primary key, compared with SQLite's own collation. \
            --match searches the table's full-text index (a FullTextIndex declared in a migration) in FTS5's syntax \
            and ranks by relevance (bm25), as sqlite3's ORDER BY rank does. \
            The database is opened read-only and never created.
            """)

    /// Where the store is and how to open it.
    @OptionGroup var options: StoreOptions

    /// The table, filter and order.
    @OptionGroup var query: QueryOptions

    /// The `--limit` option: at most this many rows.
    @Option(help: "At most this many rows.")
    var limit: Int?

    /// The `--format` option: output format: table, json or csv.
    @Option(help: "Output format: table, json or csv.")
    var format: RowFormat?

    /// Checks the options' values before anything is opened (a bad one exits
    /// with a usage error and changes nothing).
    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be a positive number, got \(limit)") }
    }

    /// Runs the command.
    func run() throws {
        let (filter, orderings) = try query.parse()
        let store = try options.openExisting(readOnly: true)
        // Rows are written as they are read: memory stays flat in the number of rows.
        try store.read { db in
            let info = try db.tableInfo(query.table)
            let orderBy = query.orderings(orderings, for: info)
            // Nothing reaches standard output before the query is prepared: a
            // bad filter or order throws while the header is still buffered.
            let out = OutputBuffer()
            let stream: RowStream
            switch format ?? .table {
            case .csv: stream = CSVStream(columns: info.columnNames, out: out)
            case .json: stream = JSONStream(columns: info.columnNames, out: out)
            case .table: stream = TableStream(columns: info.columnNames, out: out)
            }
            let count = try db.forEachRow(table: info.name, filter: filter, orderBy: orderBy, limit: limit) { stream.row($0) }
            stream.finish(count: count)
        }
    }
}
