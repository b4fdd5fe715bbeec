import ArgumentParser
import Foundation

/// `sluice-benchmarks`: the release-mode benchmarks, each beside the raw SQLite C API (and
/// GRDB where it applies) in the same run, printed as a table with the ratios and targets.
@main
struct SluiceBenchmarks: AsyncParsableCommand {
    /// The groups `--only` runs. Those marked "alone" run only when named alone (long, or they
    /// need the release sluice-sync: swift build -c release --package-path Server --product sluice-sync);
    /// those marked "when named" run only when named, with others or alone.
    static let groups: [(name: String, what: String)] = [
        ("records", "insert, fetch and update 100,000 people: raw C, Sluice, GRDB"),
        ("live", "live queries: first result, a commit → its changeset"),
        ("log", "the change log: bulk inserts, history reads"),
        ("scale", "a live query over 1,000,000 people"),
        ("features", "sections, aggregates, relationships"),
        ("sync", "sync against the release sluice-sync and a throwaway PostgreSQL"),
        ("wakeups", "idle cost while observing, another connection's commit → changeset"),
        ("search", "ranked full-text search"),
        ("sync-latency", "alone: a commit on A → the changeset on B, 201 times"),
        ("sync-initial", "alone: a first push of 100,000 people; a new device replaying them, then from a snapshot"),
        ("sync-crowd", "alone: 30, then 100 devices on one space"),
        ("sync-scale", "alone: one and two service instances"),
        ("window", "when named: windows of a conversation of 10,000,000 messages"),
        ("huge-commit", "alone: an observer's memory through one huge commit"),
        ("wal-soak", "alone: the WAL over 100,000 commits with lists open"),
        ("log-bulk", "alone: bulk inserts with the log on"),
        ("log-fallback", "alone: the log's fallback capture"),
        ("log-foreign", "alone: what tracking a table costs other writers"),
    ]

    static let configuration = CommandConfiguration(
        commandName: "sluice-benchmarks",
        abstract: "Sluice's benchmarks, each beside the raw SQLite C API (and GRDB) in the same run.",
        discussion: """
            Run in release mode: swift run -c release --package-path Benchmarks sluice-benchmarks [options]. \
            Without --only, every group not marked "alone" or "when named" runs. Groups:
            \(groups.map { "  \($0.name): \($0.what)" }.joined(separator: "\n"))
            Methods, ranges and targets: Benchmarks/README.md.
            """
    )

    @Flag(help: "Medians of 3 runs instead of 7, and smaller workloads where a group has them.")
    var quick = false

    @Option(help: ArgumentHelp("The groups to run, comma-separated (see the list above).", valueName: "groups"))
    var only: String?

    @Option(help: ArgumentHelp("Writes an SVG of the chart's rows (the README's: --only=records,live,window --chart=Benchmarks/chart.svg).", valueName: "path"))
    var chart: String?

    // Development aids (for a profiler) and the benchmarks' own child processes.
    @Flag(help: .hidden) var compareFetch = false
    @Option(help: .hidden) var rounds = 40
    @Flag(help: .hidden) var profileFetch = false
    @Flag(help: .hidden) var profileFetchTable = false
    @Flag(help: .hidden) var profileLog = false
    @Flag(help: .hidden) var profileUpdate = false
    @Option(help: .hidden) var hugeWatcher: String?
    @Option(help: .hidden) var walWatcher: String?

    func validate() throws {
        let known = Set(Self.groups.map(\.name))
        if let unknown = selected?.first(where: { !known.contains($0) }) {
            throw ValidationError("no benchmark group '\(unknown)'; the groups are \(Self.groups.map(\.name).joined(separator: ", "))")
        }
    }

    /// The groups `--only` names (nil: the default set).
    var selected: Set<String>? { only.map { Set($0.split(separator: ",").map(String.init)) } }

    func run() async throws {
        if let hugeWatcher { try HugeCommitBenchmark.watch(path: hugeWatcher) }
        if let walWatcher { try WALSoakBenchmark.watch(path: walWatcher) }
        if try runDevelopmentAid() { return }
        var harness = Harness()
        print("Sluice benchmarks (release build; medians of \(quick ? 3 : 7) runs; raw = SQLite C API in the same process)")
        do {
            try await runGroups(&harness)
        } catch {
            print("benchmark failed: \(error)")
            throw ExitCode.failure
        }
        harness.printTable()
        if let chart {
            let day = Date().formatted(.iso8601.year().month().day())
            try harness.chart.svg(caption: "Measured \(day) at \(Chart.commit()) on a 2-core Linux machine; medians. Method and ranges: Benchmarks/README.md")
                .write(toFile: chart, atomically: true, encoding: .utf8)
            print("chart: \(chart)")
        }
    }

    private func runGroups(_ harness: inout Harness) async throws {
        let names = selected
        // The one group named, for those that run only alone.
        let only = names.flatMap { $0.count == 1 ? $0.first : nil }
        func runs(_ name: String) -> Bool { names == nil || names?.contains(name) == true }
        if runs("records") { try RecordsBenchmark.run(&harness, count: 100_000, repetitions: quick ? 3 : 7) }
        if runs("live") { try LiveQueryBenchmark.run(&harness, quick: quick) }
        if runs("log") { try ChangeLogBenchmark.run(&harness, quick: quick) }
        if runs("scale") { try ScaleBenchmark.run(&harness, quick: quick) }
        if runs("features") { try FeaturesBenchmark.run(&harness, quick: quick) }
        if runs("sync") { for line in try await SyncBenchmark.run(quick: quick) { harness.noteLine(line) } }
        if only == "sync-latency" { for line in try await SyncBenchmark.runLatency(quick: quick) { harness.noteLine(line) } }
        if only == "sync-initial" { for line in try await SyncBenchmark.runInitial(quick: quick) { harness.noteLine(line) } }
        if only == "sync-crowd" { for line in try await SyncBenchmark.runCrowd(quick: quick) { harness.noteLine(line) } }
        if only == "sync-scale" { for line in try await SyncScaleBenchmark.run(quick: quick) { harness.noteLine(line) } }
        if runs("wakeups") { try WakeUpBenchmark.run(&harness, quick: quick) }
        if names?.contains("window") == true { try WindowBenchmark.run(&harness, quick: quick) }
        if only == "huge-commit" { try HugeCommitBenchmark.run(&harness, quick: quick) }
        if only == "wal-soak" { try WALSoakBenchmark.run(&harness, quick: quick) }
        if runs("search") { try SearchBenchmark.run(&harness, quick: quick) }
        if only == "log-bulk" || only == "log-fallback" || only == "log-foreign" {
            try ChangeLogBenchmark.run(&harness, quick: quick, only: only)
        }
    }

    /// Runs a development aid when one is asked for; whether it did.
    private func runDevelopmentAid() throws -> Bool {
        if profileFetch { try RecordsBenchmark.profileFetch(); return true }
        if profileFetchTable { try RecordsBenchmark.profileFetch(table: true); return true }
        if compareFetch {
            // Raw, @Table and Codable fetches of the same rows in turn, with what Codable itself costs.
            try RecordsBenchmark.compareFetch(rounds: rounds)
            return true
        }
        if profileLog {
            // Bulk inserts with the change log on, for a profiler.
            for logs in [false, true, false, true] {
                let phases = try ChangeLogBenchmark.bulkInsertPhases(logs: logs)
                print("log \(logs): inserts \(Harness.format(phases.inserts)), commit \(Harness.format(phases.commit))")
            }
            return true
        }
        if profileUpdate {
            // Many single-row updates at 100,000 rows, for a profiler.
            let (latency, _) = try LiveQueryBenchmark.latency(count: 100_000, samples: 2_000)
            print(latency.summary)
            return true
        }
        return false
    }
}
