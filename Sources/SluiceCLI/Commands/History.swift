import ArgumentParser
import Dispatch
import Foundation
import Sluice

/// `sluice history`: the change log, one transaction per line.
struct History: ParsableCommand {
    /// The command's name, abstract and discussion, as `--help` shows them.
    static let configuration = CommandConfiguration(
        abstract: "Print the change log: committed transactions with the rows they changed and their values.",
        discussion: """
            --format json prints JSON Lines, one transaction per line: {"token":"...","at":"2026-11-22T10:00:00.000Z",\
            "author":"cli","changes":[{"table":"person","id":5,"op":"update","old":{"age":30},"new":{"age":31}}]} \
            (op is insert, update or delete; an insert has only "new", a delete only "old" with every column). \
            --since TOKEN starts after a token printed earlier; --last N prints only the newest N; --follow keeps \
            printing new transactions, from any process, until interrupted. The database is opened read-only. \
            Sluice writers log every commit; other programs (the sqlite3 shell, another library) are logged only \
            for tables tracked with `sluice track TABLE`.
            """)

    /// Where the store is and how to open it.
    @OptionGroup var options: StoreOptions

    /// The `--since` option: print only transactions after this token.
    @Option(help: ArgumentHelp("Print only transactions after this token.", valueName: "token"))
    var since: String?

    /// The `--last` option: print only the newest N transactions (before --follow's new ones).
    @Option(help: ArgumentHelp("Print only the newest N transactions (before --follow's new ones).", valueName: "n"))
    var last: Int?

    /// The `--table` option: only changes to this table (repeat for several).
    @Option(name: .customLong("table"), help: ArgumentHelp("Only changes to this table (repeat for several).", valueName: "table"))
    var tables: [String] = []

    /// The `--follow` flag: keep printing new transactions as they commit.
    @Flag(help: "Keep printing new transactions as they commit.")
    var follow = false

    /// The `--format` option: output format: table (readable) or json (JSON Lines).
    @Option(help: "Output format: table (readable) or json (JSON Lines).")
    var format: Watch.WatchFormat = .table

    /// Checks the options' values before anything is opened (a bad one exits
    /// with a usage error and changes nothing).
    func validate() throws {
        if let since, HistoryToken(since) == nil {
            throw ValidationError("--since '\(since)' is not a history token (they look like 3f9a0c1b2d4e-42; `sluice history` prints them)")
        }
        if let last, last < 1 {
            throw ValidationError("--last takes a count of transactions, 1 or more (got \(last))")
        }
    }

    /// Runs the command.
    func run() throws {
        // Read-only first: a file with no change log gets the clear error and
        // stays as it was. Then a writer when the file allows one: it closes a
        // foreign writer's newest logged transaction so that it prints too
        // (a read-only store leaves it out until a later transaction follows).
        let reader = try options.openExisting(readOnly: true)
        _ = try reader.currentToken
        let store = (try? options.openExisting()) ?? reader
        let start = try since.flatMap(HistoryToken.init) ?? store.earliestToken
        let names = try store.read { db in try tables.map { try db.tableInfo($0).name } }
        let wanted = Set(names.map { $0.lowercased() })
        let transactions = try store.changes(since: start, tables: names.isEmpty ? nil : names)
        let newest = transactions.last?.token ?? start
        for transaction in transactions.suffix(last ?? transactions.count) {
            Self.print(transaction, wanted: wanted, format: format)
        }
        guard follow else { return }
        let done = DispatchSemaphore(value: 0)
        let failure = Locked<Error?>(nil)
        let stream = store.transactions(from: newest)
        Task.detached { [format] in
            do {
                for try await transaction in stream {
                    Self.print(transaction, wanted: wanted, format: format)
                }
            } catch {
                failure.value = error
            }
            done.signal()
        }
        done.wait()
        if let error = failure.value { throw error }
    }

    /// Prints one transaction, only its changes to `wanted` tables (all when empty).
    private static func print(_ transaction: LoggedTransaction, wanted: Set<String>, format: Watch.WatchFormat) {
        let changes = transaction.changes.filter { wanted.isEmpty || wanted.contains($0.table.lowercased()) }
        guard !changes.isEmpty else { return }
        let at = Timestamps.iso8601(transaction.date)
        let text: String
        switch format {
        case .json:
            let items = changes.map { change in
                var fields = [#""table":"# + JSONRows.string(change.table), #""id":"# + JSONRows.value(change.key),
                              #""op":"# + JSONRows.string(change.operation.rawValue)]
                if let old = change.old { fields.append(#""old":"# + JSONRows.object(old)) }
                if let new = change.new { fields.append(#""new":"# + JSONRows.object(new)) }
                return "{" + fields.joined(separator: ",") + "}"
            }
            text = #"{"token":"# + JSONRows.string(transaction.token.description) + #","at":"# + JSONRows.string(at)
                + #","author":"# + (transaction.author.map(JSONRows.string) ?? "null")
                + #","changes":["# + items.joined(separator: ",") + "]}"
        case .table:
            var lines = ["\(transaction.token)  \(at)  \(transaction.author ?? "-")"]
            for change in changes {
                func describe(_ row: Row?) -> String {
                    guard let row else { return "" }
                    return zip(row.columns, row.values).map { "\($0)=\(TableRenderer.cell($1))" }.joined(separator: " ")
                }
                switch change.operation {
                case .insert: lines.append("  + \(change.table) \(TableRenderer.cell(change.key)): \(describe(change.new))")
                case .delete: lines.append("  - \(change.table) \(TableRenderer.cell(change.key)): \(describe(change.old))")
                case .update: lines.append("  ~ \(change.table) \(TableRenderer.cell(change.key)): \(describe(change.old)) → \(describe(change.new))")
                }
            }
            text = lines.joined(separator: "\n")
        }
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }
}

/// `sluice track`: foreign writers of these tables fill the change log.
struct Track: ParsableCommand {
    /// The command's name, abstract and discussion, as `--help` shows them.
    static let configuration = CommandConfiguration(
        abstract: "Install triggers so that writers that are not Sluice (the sqlite3 shell, other tools) fill the change log.",
        discussion: "Then other processes' changes to these tables reach live queries incrementally, and `sluice history` shows them.")

    /// Where the store is and how to open it.
    @OptionGroup var options: StoreOptions

    /// The argument: the tables to track.
    @Argument(help: ArgumentHelp("The tables to track.", valueName: "table"))
    var tables: [String]

    /// Runs the command.
    func run() throws {
        let store = try options.openExisting()
        try store.trackForeignWriters(tables: tables)
        print("tracking \(try store.foreignTrackedTables().joined(separator: ", "))")
    }
}

/// `sluice untrack`: removes the triggers `track` installed, and nothing else.
struct Untrack: ParsableCommand {
    /// The command's name, abstract and discussion, as `--help` shows them.
    static let configuration = CommandConfiguration(
        abstract: "Remove the change-log triggers of these tables (of every tracked table when none are named), and nothing else.")

    /// Where the store is and how to open it.
    @OptionGroup var options: StoreOptions

    /// The argument: the tables to untrack (default: all).
    @Argument(help: ArgumentHelp("The tables to untrack (default: all).", valueName: "table"))
    var tables: [String] = []

    /// Runs the command.
    func run() throws {
        let store = try options.openExisting()
        let removed = try store.untrackForeignWriters(tables: tables.isEmpty ? nil : tables)
        print(removed.isEmpty ? "no table was tracked" : "untracked \(removed.joined(separator: ", "))")
    }
}

/// A value shared with a detached task.
final class Locked<Value>: @unchecked Sendable {
    // @unchecked Sendable: guarded by `lock`.
    /// Guards `stored`.
    private let lock = NSLock()
    /// The value.
    private var stored: Value
    /// A box holding `value`.
    init(_ value: Value) { stored = value }
    /// The value, read and written under the lock.
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
