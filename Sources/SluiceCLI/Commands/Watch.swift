import ArgumentParser
import Dispatch
import Foundation
import Rainbow
import Sluice

/// `sluice watch`: prints a live query's rows, then one changeset per commit.
struct Watch: ParsableCommand {
    /// The command's name, abstract and discussion, as `--help` shows them.
    static let configuration = CommandConfiguration(
        abstract: "Print a table's rows, then how each commit changes them, until interrupted.",
        discussion: """
            Follows commits by any process (this store's writers, the sqlite3 shell, other apps) within about \
            10 ms. --format json prints JSON Lines, flushed at once: {"kind":"initial","rows":[...]}, then \
            {"kind":"update","deletions":[...],"insertions":[...],"modifications":[...],"modificationsNew":[...],\
            "moves":[[from,to],...],"deleted":[{"id":...}],"inserted":[...],"modified":[...]} per commit (indices as \
            Realm's: deletions and modifications in the previous result, insertions and modificationsNew in the new \
            one; "deleted" gives the primary key of the row at each index of "deletions", in the same order, so \
            a consumer needs no copy of the list). \
            With --section-by COLUMN the rows are grouped by that column's value (sorted by it first) and each \
            commit prints section changes: {"kind":"initial","sections":[{"key":...,"rows":[...]}]}, then \
            {"kind":"update","sectionsToDelete":[...],"sectionsToInsert":[...],"deletions":[[section,row],...],\
            "insertions":[...],"modifications":[...],"modificationsNew":[...],"insertedSections":[{"key":...,"rows":[...]}],\
            "inserted":[...],"modified":[...]} (deletions, modifications and sectionsToDelete in the previous sections; \
            the rest in the new ones; rows of deleted and inserted sections are not listed one by one). \
            With --limit N the watcher follows a window of N rows of the ordered result instead of all of them             (the first N; from row --offset K; or the --last N): each commit's changed rows are placed in it, never by             running the query again, indices are in the window, and each line gains "offset" (where the window starts             in the whole result) and "total" (how many rows that has; null until counted, just after the first line).             A commit that moves only those prints an update with empty changes.             The database is opened read-only.
            """)

    /// Where the store is and how to open it.
    @OptionGroup var options: StoreOptions

    /// The table, filter and order.
    @OptionGroup var query: QueryOptions

    /// The `--format` option: output format: table (readable, coloured on a terminal) or json (JSON Lines).
    @Option(help: "Output format: table (readable, coloured on a terminal) or json (JSON Lines).")
    var format: WatchFormat = .table

    /// The formats `watch` prints changes in.
    enum WatchFormat: String, ExpressibleByArgument, CaseIterable { case table, json }

    /// The `--section-by` option: group the rows into sections by this column's value.
    @Option(name: .customLong("section-by"), help: ArgumentHelp("Group the rows into sections by this column's value.", valueName: "column"))
    var sectionBy: String?

    /// Runs the command.
    /// The `--limit` option: follow a window of this many rows.
    @Option(help: ArgumentHelp("Follow a window of this many rows of the ordered result (kept from each commit's changed rows).", valueName: "N"))
    var limit: Int?

    /// The `--offset` option: where the window starts.
    @Option(help: ArgumentHelp("With --limit: the window starts at this row (0 is the first), and stays at that position.", valueName: "K"))
    var offset: Int?

    /// The `--last` flag: the window holds the last rows.
    @Flag(help: "With --limit: the last N rows (the newest, in time order), rows appended entering at its end.")
    var last = false

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be a positive number, got \(limit)") }
        if let offset, offset < 0 { throw ValidationError("--offset must not be negative, got \(offset)") }
        if limit == nil, offset != nil || last { throw ValidationError("--offset and --last go with --limit N") }
        if offset != nil, last { throw ValidationError("give --offset K or --last, not both") }
        if limit != nil, sectionBy != nil { throw ValidationError("--section-by cannot be combined with --limit: watch the window's rows without sections") }
    }

    /// The window the options ask for, if any.
    var window: ResultsWindow? {
        guard let limit else { return nil }
        if last { return .last(limit) }
        return offset.map { .offset($0, count: limit) } ?? .first(limit)
    }

    func run() throws {
        let (filter, orderings) = try query.parse()
        let store = try options.openExisting(readOnly: true)
        let info = try store.read { db in try db.tableInfo(query.table) }
        var results = store.rows(in: info.name).sorted(by: query.orderings(orderings, for: info))
        if let filter { results = results.filter(filter) }
        if let window { results = results.window(window) }

        if let sectionBy {
            guard let column = info.column(named: sectionBy) else {
                throw ValidationError("--section-by: unknown column '\(sectionBy)' in table \(info.name) (columns: \(info.columnNames.joined(separator: ", ")))")
            }
            let printer = SectionPrinter(format: format, columns: info.columnNames)
            try follow { queue, report in
                results.sectioned(by: column.name).observe(on: queue) { change in
                    if case .error(let error) = change { report(error) } else { printer.print(change) }
                }
            }
        }
        let printer = ChangePrinter(format: format, columns: info.columnNames, keyColumns: info.primaryKey.filter(info.columnNames.contains))
        try follow { queue, report in
            results.observe(on: queue) { change in
                if case .error(let error) = change { report(error) } else { printer.print(change) }
            }
        }
    }

    /// Observes on a queue of its own (this thread blocks, and the store's
    /// default delivery queue is the main queue) until interrupted, or until
    /// the query fails: then prints why and exits non-zero.
    private func follow(_ observe: (DispatchQueue, @escaping @Sendable (StoreError) -> Void) -> ObservationToken) throws -> Never {
        let failed = DispatchSemaphore(value: 0)
        let token = observe(DispatchQueue(label: "sluice.watch")) { error in
            Terminal.printError("Error: \(error)")
            failed.signal()
        }
        failed.wait()
        token.invalidate()
        throw ExitCode.failure
    }
}

/// Turns changes into lines on standard output. Called on one serial
/// queue only, one change at a time.
final class ChangePrinter: @unchecked Sendable {
    // @unchecked Sendable: `previous` is only touched from the observation queue.
    /// The format.
    private let format: Watch.WatchFormat
    /// The columns shown.
    private let columns: [String]
    /// The primary key's columns ("deleted" gives them); empty: the whole row.
    private let keyColumns: [String]
    /// The rows as last printed (a changeset's deleted rows are read from here).
    private var previous: [Row] = []

    /// A printer of flat changes.
    init(format: Watch.WatchFormat, columns: [String], keyColumns: [String] = []) {
        self.format = format
        self.columns = columns
        self.keyColumns = keyColumns
    }

    /// A deleted row's primary key as a JSON object (every column when the table declares none).
    private func deletedKey(_ index: Int) -> String {
        guard index < previous.count else { return "{}" }
        let row = previous[index]
        guard !keyColumns.isEmpty else { return JSONRows.object(row) }
        let values = keyColumns.map { name in row.columns.firstIndex(of: name).map { row.values[$0] } ?? .null }
        return JSONRows.object(Row(columns: keyColumns, values: values))
    }

    /// Prints one change: the first rows, then each changeset.
    func print(_ change: CollectionChange<Row>) {
        let out = OutputBuffer()
        switch (format, change) {
        case (.json, .initial(let rows)):
            out.append(#"{"kind":"initial","rows":["#)
            out.appendList(rows, JSONRows.object)
            out.append("]" + Self.position(rows.window) + "}")
        case (.json, .update(let rows, let deletions, let insertions, let modifications)):
            let numbers = { (values: [Int]) in "[" + values.map(String.init).joined(separator: ",") + "]" }
            out.append(#"{"kind":"update","deletions":"# + numbers(deletions))
            out.append(#","insertions":"# + numbers(insertions))
            out.append(#","modifications":"# + numbers(modifications))
            out.append(#","modificationsNew":"# + numbers(change.modificationsNew))
            out.append(#","moves":["# + change.moves.map { "[\($0.from),\($0.to)]" }.joined(separator: ",") + "]")
            out.append(#","deleted":["#)
            out.appendList(deletions, deletedKey)
            out.append(#"],"inserted":["#)
            out.appendList(insertions) { JSONRows.object(rows[$0]) }
            out.append(#"],"modified":["#)
            out.appendList(change.modificationsNew) { JSONRows.object(rows[$0]) }
            out.append("]" + Self.position(rows.window) + "}")
        case (.table, .initial(let rows)):
            out.append("initial".bold + Self.range(rows.window, count: rows.count) + "\n" + TableRenderer.render(Array(rows), columns: columns))
        case (.table, .update(let rows, let deletions, let insertions, _)):
            out.append(tableUpdate(change, rows: rows, deletions: deletions, insertions: insertions, moves: change.moves))
        case (_, .error):
            return
        }
        out.append("\n")
        out.flush()
        change.apply(to: &previous)
    }

    /// Prints an update as a table: the rows deleted, inserted and modified, by index.
    /// ` · rows 41–50 of 1,000` for a window (`?` until counted); nothing otherwise.
    static func range(_ window: WindowPosition?, count: Int) -> String {
        guard let window else { return "" }
        let total = window.totalCount.map(String.init) ?? "?"
        guard let offset = window.offset else { return " · \(count) rows of \(total)" }
        return count == 0 ? " · none of \(total)" : " · rows \(offset + 1)–\(offset + count) of \(total)"
    }

    /// `,"offset":K,"total":N` for a window (null until counted); nothing otherwise.
    static func position(_ window: WindowPosition?) -> String {
        guard let window else { return "" }
        return #","offset":"# + (window.offset.map(String.init) ?? "null") + #","total":"# + (window.totalCount.map(String.init) ?? "null")
    }

    private func tableUpdate(_ change: CollectionChange<Row>, rows: ResultsSnapshot<Row>, deletions: [Int], insertions: [Int],
                             moves: [CollectionChange<Row>.Move]) -> String {
        let moved = Dictionary(uniqueKeysWithValues: moves.map { ($0.from, $0.to) })
        let movedTo = Set(moves.map(\.to))
        var lines: [String] = []
        let summary = [
            deletions.count - moves.count > 0 ? "\(deletions.count - moves.count) deleted" : nil,
            insertions.count - moves.count > 0 ? "\(insertions.count - moves.count) inserted" : nil,
            change.modificationsNew.isEmpty ? nil : "\(change.modificationsNew.count) modified",
            moves.isEmpty ? nil : "\(moves.count) moved",
        ].compactMap { $0 }.joined(separator: ", ")
        lines.append("commit".bold + " " + summary + " (\(rows.count) row\(rows.count == 1 ? "" : "s"))" + Self.range(rows.window, count: rows.count))
        for index in deletions where moved[index] == nil {
            lines.append("  - [\(index)] ".red + describe(previous[index]).red)
        }
        for index in insertions where !movedTo.contains(index) {
            lines.append("  + [\(index)] ".green + describe(rows[index]).green)
        }
        for move in moves {
            lines.append("  ↕ [\(move.from)→\(move.to)] ".cyan + describe(rows[move.to]).cyan)
        }
        for index in change.modificationsNew {
            lines.append("  ~ [\(index)] ".yellow + describe(rows[index]).yellow)
        }
        return lines.joined(separator: "\n")
    }

    /// A row as `key=value` pairs of the columns shown.
    private func describe(_ row: Row) -> String {
        zip(row.columns, row.values).map { "\($0)=\(TableRenderer.cell($1))" }.joined(separator: " ")
    }
}

/// Turns section changes into lines on standard output, on one serial queue.
final class SectionPrinter: @unchecked Sendable {
    // @unchecked Sendable: `previous` is only touched from the observation queue.
    /// The format.
    private let format: Watch.WatchFormat
    /// The columns shown.
    private let columns: [String]
    /// The sections as last printed.
    private var previous: [(key: SQLiteValue, items: [Row])] = []

    /// A printer of section changes.
    init(format: Watch.WatchFormat, columns: [String]) {
        self.format = format
        self.columns = columns
    }

    /// Index paths as `section.item`, comma-separated.
    private static func paths(_ paths: [IndexPath]) -> String {
        "[" + paths.map { "[\($0[0]),\($0[1])]" }.joined(separator: ",") + "]"
    }

    /// Indices, comma-separated.
    private static func numbers(_ indices: some Sequence<Int>) -> String {
        "[" + indices.map(String.init).joined(separator: ",") + "]"
    }

    /// A section's key and row count.
    private static func section(_ section: ResultsSection<SQLiteValue, Row>) -> String {
        #"{"key":"# + JSONRows.value(section.key) + #","rows":["# + section.map(JSONRows.object).joined(separator: ",") + "]}"
    }

    /// Prints one change of the sections.
    func print(_ change: SectionedResultsChange<SQLiteValue, Row>) {
        let text: String
        switch (format, change) {
        case (.json, .initial(let sections)):
            text = #"{"kind":"initial","sections":["# + sections.map(Self.section).joined(separator: ",") + "]}"
        case (.json, .update(let sections, let deletions, let insertions, let modifications, let sectionsToInsert, let sectionsToDelete)):
            text = #"{"kind":"update","sectionsToDelete":"# + Self.numbers(sectionsToDelete)
                + #","sectionsToInsert":"# + Self.numbers(sectionsToInsert)
                + #","deletions":"# + Self.paths(deletions)
                + #","insertions":"# + Self.paths(insertions)
                + #","modifications":"# + Self.paths(modifications)
                + #","modificationsNew":"# + Self.paths(change.modificationsNew)
                + #","insertedSections":["# + sectionsToInsert.map { Self.section(sections[$0]) }.joined(separator: ",") + "]"
                + #","inserted":["# + insertions.map { JSONRows.object(sections[$0]) }.joined(separator: ",") + "]"
                + #","modified":["# + change.modificationsNew.map { JSONRows.object(sections[$0]) }.joined(separator: ",") + "]}"
        case (.table, .initial(let sections)):
            text = "initial".bold + " (\(sections.count) section\(sections.count == 1 ? "" : "s"))\n" + sections.map { section in
                "§ ".bold + TableRenderer.cell(section.key).bold + " (\(section.count))\n" + TableRenderer.render(Array(section), columns: columns)
            }.joined(separator: "\n")
        case (.table, .update(let sections, let deletions, let insertions, _, let sectionsToInsert, let sectionsToDelete)):
            var lines = ["commit".bold + " (\(sections.count) section\(sections.count == 1 ? "" : "s"))"]
            for index in sectionsToDelete { lines.append("  - § [\(index)] ".red + TableRenderer.cell(previous[index].key).red) }
            for index in sectionsToInsert {
                lines.append("  + § [\(index)] ".green + TableRenderer.cell(sections[index].key).green + " (\(sections[index].count))".green)
            }
            for path in deletions { lines.append("  - [\(path[0]),\(path[1])] ".red + describe(previous[path[0]].items[path[1]]).red) }
            for path in insertions { lines.append("  + [\(path[0]),\(path[1])] ".green + describe(sections[path]).green) }
            for path in change.modificationsNew { lines.append("  ~ [\(path[0]),\(path[1])] ".yellow + describe(sections[path]).yellow) }
            text = lines.joined(separator: "\n")
        case (_, .error):
            return
        }
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
        change.apply(to: &previous) { $0 }
    }

    /// A row as `key=value` pairs of the columns shown.
    private func describe(_ row: Row) -> String {
        zip(row.columns, row.values).map { "\($0)=\(TableRenderer.cell($1))" }.joined(separator: " ")
    }
}
