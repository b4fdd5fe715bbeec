import ArgumentParser
import Foundation
import Sluice
import SluiceDemo

/// `sluice tour`: the main job on the embedded default — migrate, seed and
/// query ./sluice.sqlite, showing the commands that do each step.
struct Tour: ParsableCommand {
    /// The command's name, abstract and discussion, as `--help` shows them.
    static let configuration = CommandConfiguration(
        abstract: "Migrate, seed and query a demo store (./sluice.sqlite by default), showing each step.")

    /// Where the store is and how to open it.
    @OptionGroup var options: StoreOptions

    /// The `--people` option: how many people to generate when the store is empty.
    @Option(help: "How many people to generate when the store is empty.")
    var people = 1_000

    /// Runs the command.
    func run() throws {
        let store = try options.openOrCreate()
        section("sluice migrate", "apply the demo schema")
        let applied = try store.migrate(DemoSchema.migrations)
        print(applied.isEmpty ? "up to date" : applied.map { "applied \($0.identifier)" }.joined(separator: "\n"))

        let existing = try store.read { db in try db.fetchCount(Person.self) }
        if existing == 0 {
            section("sluice seed --demo --people \(people)", "generate people, packages and chats")
            let start = Date()
            let counts = try Seed.generate(people: people, seed: 42, into: store)
            print("seeded \(counts.people) people, \(counts.packages) packages (\(counts.contents) items), \(counts.messages) messages in \(String(format: "%.2f", Date().timeIntervalSince(start))) s")
        } else {
            section("sluice seed --demo", "skipped: the store already has \(existing) people")
        }

        try show(store, "person", where: "age BETWEEN 30 AND 40 AND city == 'Oslo'", order: "last_name, first_name", limit: 5,
                 note: "people in their thirties in Oslo")
        try show(store, "person", where: "first_name BEGINSWITH[c] 'zo' OR last_name CONTAINS[c] 'ø'", order: "first_name", limit: 5,
                 note: "case-insensitive, Unicode-aware string operators")
        try show(store, "person", where: "email IS NULL", order: "age", desc: true, limit: 3, note: "NULL checks and descending order")
        try show(store, "package_content", where: "weight > 2500", order: "weight", desc: true, limit: 5, note: "the heaviest items")
        try show(store, "message", where: "conversation_id == 1", order: "sent_at", limit: 6, note: "a chat history in sent order")

        section("typed Swift API", "the first query again, as an app writes it")
        // The @Table model's key paths: the same SQL as the query string above.
        print("""
            let thirtiesInOslo = store.objects(Person.self)
                .where { $0.age.between(30, 40) && $0.city == "Oslo" }
                .sorted(by: \\.lastName, \\.firstName)
                .limit(5)
            """)
        let thirtiesInOslo = store.objects(Person.self)
            .where { $0.age.between(30, 40) && $0.city == "Oslo" }
            .sorted(by: \.lastName, \.firstName)
            .limit(5)
        let people = try thirtiesInOslo.fetch()
        print("→ \(people.count) people, the rows of the first query:")
        for person in people {
            print("\(person.id.map(String.init) ?? "?")  \(person.fullName), \(person.age.map(String.init) ?? "?"), \(person.city ?? "")")
        }
        print("\nNext: `sluice query person --where \"age > 80\" --format json`, or `sluice --help`.")
    }

    /// Prints a command of the tour and what it shows.
    private func section(_ command: String, _ note: String) {
        print("\n$ \(command)    # \(note)")
    }

    /// Prints the rows `sluice query` would for these options.
    private func show(_ store: Store, _ table: String, where filter: String, order: String, desc: Bool = false, limit: Int, note: String) throws {
        let orderArgument = order.contains(" ") ? "\"\(order)\"" : order
        section("sluice query \(table) --where \"\(filter)\" --order \(orderArgument)\(desc ? " --desc" : "") --limit \(limit)", note)
        var orderings = try Ordering.parse(order)
        if desc { orderings = orderings.map(\.reversed) }
        let (rows, columns) = try store.read { db in
            (try db.fetchRows(table: table, filter: try Filter(filter), orderBy: orderings, limit: limit), try db.tableInfo(table).columnNames)
        }
        print(TableRenderer.render(rows, columns: columns))
    }
}
