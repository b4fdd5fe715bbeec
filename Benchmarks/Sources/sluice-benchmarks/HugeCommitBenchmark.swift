import BenchSQLite
import Dispatch
import Foundation
import Sluice
import SluiceDemo

/// What one huge commit costs an observer: a process observing 200,000
/// people (sorted by last name, the table tracked) while another
/// connection updates every row in one transaction. Its resident memory
/// before (steady), at the peak while it applies the commit, and after.
/// The bar: the peak at most twice the steady state.
enum HugeCommitBenchmark {
    /// The observing process: this binary with `--huge-watcher=PATH`. It
    /// prints `ready RSS` once its first result is in, then `applied PEAK
    /// AFTER` when the changeset of the next commit arrived (bytes), and exits.
    static func watch(path: String) throws -> Never {
        let store = try Store(path: path)
        let arrivals = SyncBenchmark.Arrivals()
        let sizes = Sizes()
        let token = store.objects(Person.self).sorted(by: \.lastName).observe(on: DispatchQueue(label: "watcher")) { change in
            if case .update(_, _, _, let modifications) = change { sizes.note(modifications.count) }
            arrivals.arrived()
        }
        while arrivals.count == 0 { usleep(1_000) }
        ScaleBenchmark.resetPeak()
        say("ready \(ScaleBenchmark.residentBytes().now)")
        while arrivals.count < 2 { usleep(1_000) }
        let resident = ScaleBenchmark.residentBytes()
        say("applied \(resident.peak) \(resident.now) \(sizes.modified)")
        withExtendedLifetime(token) {}
        exit(0)
    }

    /// A line to the parent, unbuffered.
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    final class Sizes: @unchecked Sendable {
        // @unchecked Sendable: guarded by `lock`.
        private let lock = NSLock()
        private var stored = 0
        var modified: Int { lock.withLock { stored } }
        func note(_ count: Int) { lock.withLock { stored = count } }
    }

    static func run(_ harness: inout Harness, quick: Bool) throws {
        let count = 200_000
        var steady: [Double] = [], peak: [Double] = [], after: [Double] = []
        for _ in 0..<(quick ? 1 : 3) {
            let path = freshDatabasePath("huge-commit")
            defer { removeDatabase(at: path) }
            _ = try ScaleBenchmark.peopleStore(path: path, count: count)
            try Store(path: path).trackForeignWriters(tables: ["person"])
            let watcher = Process()
            watcher.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            watcher.arguments = ["--huge-watcher=\(path)"]
            let output = Pipe()
            watcher.standardOutput = output
            try watcher.run()
            var lines = LineReader(output.fileHandleForReading)
            guard let ready = lines.next(), ready.hasPrefix("ready ") else { throw SyncBenchmark.Failure(description: "the watcher did not start") }
            let other = RecordsBenchmark.openRaw(path)
            defer { sqlite3_close_v2(other) }
            sqlite3_exec(other, "UPDATE person SET age = age + 1", nil, nil, nil)
            guard let applied = lines.next()?.split(separator: " "), applied.count == 4, applied[0] == "applied" else {
                throw SyncBenchmark.Failure(description: "the watcher did not apply the commit")
            }
            watcher.waitUntilExit()
            steady.append(Double(ready.split(separator: " ")[1]) ?? 0)
            peak.append(Double(applied[1]) ?? 0)
            after.append(Double(applied[2]) ?? 0)
            print("huge commit: steady \(mb(steady.last ?? 0)), peak \(mb(peak.last ?? 0)), after \(mb(after.last ?? 0)), \(applied[3]) modifications")
        }
        let ratio = Harness.median(peak) / Harness.median(steady)
        harness.noteLine(String(format: "| one commit updating all %@ observed rows (another connection, table tracked): the observing process's RSS steady → peak → after | | %@ → %@ → %@ | %.2f× steady | ≤ 2× | %@ |",
                                count.formatted(), mb(Harness.median(steady)), mb(Harness.median(peak)), mb(Harness.median(after)), ratio, ratio <= 2 ? "ok" : "MISSED"))
    }

    static func mb(_ bytes: Double) -> String { String(format: "%.0f MB", bytes / 1_048_576) }

    /// Lines of a pipe, read as they come.
    struct LineReader {
        let handle: FileHandle
        var buffer = Data()
        init(_ handle: FileHandle) { self.handle = handle }

        mutating func next() -> String? {
            while true {
                if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...newline)
                    return line
                }
                let chunk = handle.availableData
                if chunk.isEmpty { return nil }
                buffer.append(chunk)
            }
        }
    }
}
