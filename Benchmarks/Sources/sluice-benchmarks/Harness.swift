import Foundation
import SluiceDemo

/// Times closures and prints a comparison table.
struct Harness {
    struct Result {
        let name: String
        let raw: Double      // seconds (median)
        let sluice: Double   // seconds (median)
        let target: Double   // max ratio
        var ratio: Double { sluice / raw }
    }

    private(set) var results: [Result] = []
    private var lines: [String] = []
    /// The rows the README's chart shows (`--chart=PATH`).
    var chart = Chart()

    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
    }

    mutating func record(_ name: String, raw: [Double], sluice: [Double], target: Double, baseline: String? = nil) {
        let result = Result(name: name, raw: Self.median(raw), sluice: Self.median(sluice), target: target)
        results.append(result)
        lines.append(Self.line(result))
        print(Self.line(result) + (baseline.map { " (baseline: \($0))" } ?? ""))
    }

    /// A ready-made table line.
    mutating func noteLine(_ line: String) {
        lines.append(line)
    }

    static func format(_ seconds: Double) -> String {
        seconds >= 1 ? String(format: "%.2f s", seconds) : String(format: "%.1f ms", seconds * 1000)
    }

    static func line(_ result: Result) -> String {
        let verdict = result.ratio <= result.target ? "ok" : "MISSED"
        return "| \(result.name) | \(format(result.raw)) | \(format(result.sluice)) | \(String(format: "%.2f×", result.ratio)) | ≤ \(String(format: "%.1f×", result.target)) | \(verdict) |"
    }

    func printTable() {
        print("")
        print("| benchmark | raw SQLite C API | Sluice | ratio | target | |")
        print("|---|---|---|---|---|---|")
        for line in lines { print(line) }
    }
}

/// The demo schema without its full-text index of people: the benchmarks
/// other than search time writes and reads that the peers (the C API, GRDB)
/// do on tables with no such index, and compare with figures from before
/// the demo had one.
let demoTables = DemoSchema.migrations.filter { $0.name != "full_text_" + DemoSchema.personSearch.table }

/// A fresh temporary database path; removes the file and its WAL/SHM.
func freshDatabasePath(_ name: String) -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-bench-\(getpid())-\(name).sqlite").path
    removeDatabase(at: path)
    return path
}

func removeDatabase(at path: String) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        try? FileManager.default.removeItem(atPath: path + suffix)
    }
}
