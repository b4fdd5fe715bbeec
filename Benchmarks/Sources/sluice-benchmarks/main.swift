import Foundation

// Usage: swift run -c release --package-path Benchmarks sluice-benchmarks [--quick]
let quick = CommandLine.arguments.contains("--quick")
var harness = Harness()
print("Sluice benchmarks (release build; medians of \(quick ? 3 : 7) runs; raw = SQLite C API in the same process)")
if CommandLine.arguments.contains("--profile-fetch") { try RecordsBenchmark.profileFetch(); exit(0) }
do {
    try RecordsBenchmark.run(&harness, count: 100_000, repetitions: quick ? 3 : 7)
} catch {
    print("benchmark failed: \(error)")
    exit(1)
}
harness.printTable()
