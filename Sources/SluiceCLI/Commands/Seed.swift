import ArgumentParser
import Foundation
import Sluice
import SluiceDemo

/// `sluice seed`: loads rows from a JSON or CSV file, or generates demo data.
struct Seed: ParsableCommand {
    /// The command's name, abstract and discussion, as `--help` shows them.
    static let configuration = CommandConfiguration(
        abstract: "Load rows from a JSON or CSV file (one transaction), or generate demo data.",
        discussion: """
            JSON: {"person": [{"first_name": "Zoë", ...}], "package": [...]}, or an array of row objects with --table. \
            CSV: a header row of column names, then rows; needs --table; an empty field is NULL. \
            The whole file is one transaction: on any error nothing is written, and the error names the file, \
            the line or row, and the column. Rows may come in any order: foreign keys are checked at the end.
            """)

    /// Where the store is and how to open it.
    @OptionGroup var options: StoreOptions

    /// The argument: A .json or .csv file.
    @Argument(help: ArgumentHelp("A .json or .csv file.", valueName: "file"))
    var file: String?

    /// The `--table` option: the table the file's rows go into (needed for CSV and for a JSON array).
    @Option(help: "The table the file's rows go into (needed for CSV and for a JSON array).")
    var table: String?

    /// The `--format` option: the file's format, when its extension does not say (json or csv).
    @Option(help: "The file's format, when its extension does not say (json or csv).")
    var format: SeedFormat?

    /// The `--demo` flag: generate demo data instead (applies the demo migrations first).
    @Flag(help: "Generate demo data instead (applies the demo migrations first).")
    var demo = false

    /// The `--people` option: with --demo: how many people to generate.
    @Option(help: "With --demo: how many people to generate.")
    var people = 1_000

    /// The `--messages` option: with --demo: a long chat history of this many messages in conversation 1.
    @Option(help: "With --demo: a long chat history of this many messages in conversation 1 (for windows of it).")
    var messages = 0

    @Option(help: ArgumentHelp("With --demo: the random seed, for repeatable data.",
                               discussion: "Default: 42 for an empty store; 42 plus the number of people already there otherwise, so a second run adds other people."))
    /// The `--seed` option: the random generator's seed (the same seed makes the same data).
    var seed: UInt64?

    /// The `--reset` flag: with --demo: delete the demo tables' rows first (in the same transaction), instead of adding to them.
    @Flag(help: "With --demo: delete the demo tables' rows first (in the same transaction), instead of adding to them.")
    var reset = false

    /// The formats of a seed file.
    enum SeedFormat: String, ExpressibleByArgument { case json, csv }

    /// Checks the options' values before anything is opened (a bad one exits
    /// with a usage error and changes nothing).
    func validate() throws {
        if demo, file != nil { throw ValidationError("give either a file or --demo, not both") }
        if !demo, file == nil { throw ValidationError("give a file to load, or --demo") }
        if people < 1 { throw ValidationError("--people must be a positive number, got \(people)") }
        if messages < 0 { throw ValidationError("--messages must not be negative, got \(messages)") }
        if messages > 0, !demo { throw ValidationError("--messages goes with --demo") }
        if reset, !demo { throw ValidationError("--reset goes with --demo") }
        if let file, try fileFormat(file) == .csv, table == nil {
            throw ValidationError("a CSV file needs --table TABLE, the table its rows go into (as in: sluice seed \(file) --table person)")
        }
    }

    /// The file's format: --format, else its extension.
    private func fileFormat(_ file: String) throws -> SeedFormat {
        if let format { return format }
        guard let inferred = SeedFormat(rawValue: URL(fileURLWithPath: file).pathExtension.lowercased()) else {
            throw ValidationError("cannot tell the format of \(file) from its extension; pass --format json or --format csv")
        }
        return inferred
    }

    /// Runs the command.
    func run() throws {
        if demo {
            try seedDemo()
        } else if let file {
            try seedFile(file)
        }
    }

    /// Fills an empty store with generated demo data.
    private func seedDemo() throws {
        let store = try options.openOrCreate()
        for migration in try store.migrate(DemoSchema.migrations) {
            print("applied \(migration.identifier)")
        }
        let existing = try store.read { db in try db.fetchCount(Person.self) }
        // The same seed twice would add copies of the same people.
        let seed = seed ?? (existing == 0 || reset ? 42 : 42 &+ UInt64(existing))
        let counts = try Self.generate(people: people, seed: seed, into: store, reset: reset, history: messages)
        if existing > 0, !reset {
            print("note: \(options.path) already had \(existing) people; the demo data (seed \(seed)) was added to them (--reset replaces them instead)")
        } else if reset, existing > 0 {
            print("deleted the \(existing) people and everything of theirs that were there")
        }
        print("seeded \(counts.people) people, \(counts.packages) packages (\(counts.contents) items), \(counts.messages) messages into \(options.path)")
    }

    /// Generates demo data with a progress bar on a terminal.
    static func generate(people: Int, seed: UInt64, into store: Store, reset: Bool = false, history: Int = 0) throws -> DemoData.Counts {
        var generator = DemoData(seed: seed)
        var bar = ProgressBar()
        defer { bar.finish() }
        return try store.write { tx in
            if reset {
                try tx.execute(script: "DELETE FROM message; DELETE FROM package_content; DELETE FROM package; DELETE FROM person; DELETE FROM app_state")
            }
            var size = DemoData.Size(people: people)
            size.history = history
            return try generator.insert(size, into: tx) { bar.update($0, $1, $2) }
        }
    }

    /// Inserts the rows of a JSON or CSV file, all in one transaction, after
    /// checking every value against its column.
    private func seedFile(_ file: String) throws {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw InputError(file: file, location: nil, message: FileManager.default.fileExists(atPath: file) ? "cannot read the file" : "no such file")
        }
        let kind = try fileFormat(file)
        let store = try options.openExisting()
        let seedData: SeedData
        switch kind {
        case .json:
            seedData = try JSONSeedReader.read(data, file: file, table: table)
        case .csv:
            guard let table else { throw ValidationError("a CSV file needs --table TABLE, the table its rows go into") }
            guard let text = String(data: data, encoding: .utf8) else {
                throw InputError(file: file, location: nil, message: "the file is not UTF-8 text")
            }
            let info = try store.read { db in try db.tableInfo(table) }
            seedData = try CSVSeedReader.read(text, file: file, table: info)
        }
        let counts = try Self.insert(seedData, file: file, into: store)
        let summary = counts.map { "\($0.count) \($0.table) row\($0.count == 1 ? "" : "s")" }.joined(separator: ", ")
        print("seeded \(summary.isEmpty ? "nothing" : summary) from \(file)")
    }

    /// Inserts every row in one transaction; any error rolls all of it back
    /// and names the row.
    static func insert(_ seed: SeedData, file: String, into store: Store) throws -> [(table: String, count: Int)] {
        try store.write { tx in
            try tx.deferForeignKeys()
            var locations: [String: [Int64: String]] = [:]
            var counts: [(String, Int)] = []
            for (table, entries) in seed.tables {
                let info = try tx.tableInfo(table)
                for entry in entries {
                    do {
                        let rowID = try tx.insert(entry.row, into: info.name)
                        locations[info.name, default: [:]][rowID] = entry.location
                    } catch let error as StoreError {
                        throw InputError(file: file, location: entry.location, message: error.isSQLiteError ? error.message : error.description)
                    }
                }
                counts.append((info.name, entries.count))
            }
            // Only the rows this file wrote: a row that already pointed
            // nowhere (left by a writer with foreign keys off) is not the file's.
            let violations = try tx.foreignKeyViolations()
            if let violation = violations.first(where: { locations[$0.table]?[$0.rowID] != nil }),
               let location = locations[violation.table]?[violation.rowID] {
                throw InputError(file: file, location: location,
                                 message: "FOREIGN KEY constraint failed: the row references a \(violation.parent) that does not exist")
            }
            return counts
        }
    }
}
