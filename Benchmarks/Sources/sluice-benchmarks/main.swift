import Foundation

// Usage: swift run -c release --package-path Benchmarks sluice-benchmarks [--quick] [--only=records|live|log|scale|features|sync|sync-crowd|sync-scale|wakeups|search|log-bulk|log-fallback|log-foreign|huge-commit|wal-soak[,...]]
// [--chart=PATH]: an SVG of the chart's rows (the README's: --only=records,live --chart=Benchmarks/chart.svg)
// (sync needs the release sluice-sync: swift build -c release --package-path Server --product sluice-sync)
// Development aids: --compare-fetch[=rounds] (raw, @Table and Codable fetches of the same rows in turn,
// with what Codable itself costs), --profile-fetch[-table], --profile-log, --profile-update (for a profiler).
if let watched = CommandLine.arguments.first(where: { $0.hasPrefix("--huge-watcher=") }) {
    try HugeCommitBenchmark.watch(path: String(watched.dropFirst("--huge-watcher=".count)))
}
if let watched = CommandLine.arguments.first(where: { $0.hasPrefix("--wal-watcher=") }) {
    try WALSoakBenchmark.watch(path: String(watched.dropFirst("--wal-watcher=".count)))
}
let quick = CommandLine.arguments.contains("--quick")
var harness = Harness()
print("Sluice benchmarks (release build; medians of \(quick ? 3 : 7) runs; raw = SQLite C API in the same process)")
if CommandLine.arguments.contains("--profile-fetch") { try RecordsBenchmark.profileFetch(); exit(0) }
if let compare = CommandLine.arguments.first(where: { $0.hasPrefix("--compare-fetch") }) {
    try RecordsBenchmark.compareFetch(rounds: Int(compare.split(separator: "=").last ?? "") ?? 40)
    exit(0)
}
if CommandLine.arguments.contains("--profile-fetch-table") { try RecordsBenchmark.profileFetch(table: true); exit(0) }
if CommandLine.arguments.contains("--profile-log") {
    // Bulk inserts with the change log on, for a profiler.
    for logs in [false, true, false, true] {
        let phases = try ChangeLogBenchmark.bulkInsertPhases(logs: logs)
        print("log \(logs): inserts \(Harness.format(phases.inserts)), commit \(Harness.format(phases.commit))")
    }
    exit(0)
}
if CommandLine.arguments.contains("--profile-update") {
    // Many single-row updates at 100,000 rows, for a profiler.
    let (latency, _) = try LiveQueryBenchmark.latency(count: 100_000, samples: 2_000)
    print(latency.summary)
    exit(0)
}
do {
    // --only=NAME or --only=NAME,NAME
    let names = CommandLine.arguments.first { $0.hasPrefix("--only=") }.map { Set($0.dropFirst(7).split(separator: ",").map(String.init)) }
    var only: String? { names.flatMap { $0.count == 1 ? $0.first : nil } }
    func runs(_ name: String) -> Bool { names == nil || names?.contains(name) == true }
    if runs("records") {
        try RecordsBenchmark.run(&harness, count: 100_000, repetitions: quick ? 3 : 7)
    }
    if runs("live") {
        try LiveQueryBenchmark.run(&harness, quick: quick)
    }
    if runs("log") {
        try ChangeLogBenchmark.run(&harness, quick: quick)
    }
    if runs("scale") {
        try ScaleBenchmark.run(&harness, quick: quick)
    }
    if runs("features") {
        try FeaturesBenchmark.run(&harness, quick: quick)
    }
    if runs("sync") {
        for line in try await SyncBenchmark.run(quick: quick) { harness.noteLine(line) }
    }
    if only == "sync-crowd" {
        for line in try await SyncBenchmark.runCrowd(quick: quick) { harness.noteLine(line) }
    }
    if only == "sync-scale" {
        for line in try await SyncScaleBenchmark.run(quick: quick) { harness.noteLine(line) }
    }
    if runs("wakeups") {
        try WakeUpBenchmark.run(&harness, quick: quick)
    }
    if only == "huge-commit" {
        try HugeCommitBenchmark.run(&harness, quick: quick)
    }
    if only == "wal-soak" {
        try WALSoakBenchmark.run(&harness, quick: quick)
    }
    if runs("search") {
        try SearchBenchmark.run(&harness, quick: quick)
    }
    if only == "log-bulk" || only == "log-fallback" || only == "log-foreign" {
        try ChangeLogBenchmark.run(&harness, quick: quick, only: only)
    }
} catch {
    print("benchmark failed: \(error)")
    exit(1)
}
harness.printTable()
if let path = CommandLine.arguments.first(where: { $0.hasPrefix("--chart=") }).map({ String($0.dropFirst(8)) }) {
    let day = Date().formatted(.iso8601.year().month().day())
    try harness.chart.svg(caption: "Measured \(day) at \(Chart.commit()) on a 2-core Linux machine; medians. Method and ranges: Benchmarks/README.md")
        .write(toFile: path, atomically: true, encoding: .utf8)
    print("chart: \(path)")
}
