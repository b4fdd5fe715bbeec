import BenchSQLite
import Dispatch
import Foundation
import SluiceDemo
import Sluice

/// An app's whole life, shortened: many single-row commits (this store's,
/// another connection's, the `sqlite3` shell's) with ten live queries open
/// in this process and a watcher in another; the WAL's largest size, the
/// process's resident memory along the way, and whether another
/// connection's TRUNCATE checkpoint gets through at the end: `--only=wal-soak`.
enum WALSoakBenchmark {
    /// The target: twice SQLite's default auto-checkpoint.
    static let walBound = 8 << 20

    static func walSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? Int) ?? 0
    }

    /// Resident memory of this process, in MB (Linux: /proc/self/statm).
    static func residentMB() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Double(fields[1]) else { return 0 }
        return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
    }

    /// The watcher process: this binary with `--wal-watcher=PATH` observes
    /// the file with a read-only store until it is ended.
    static func watch(path: String) throws -> Never {
        var configuration = Store.Configuration()
        configuration.readOnly = true
        let store = try Store(path: path, configuration: configuration)
        let token = try store.objects(Person.self).filter("age >= 30").sorted(byKeyPath: "last_name")
            .observe(on: DispatchQueue(label: "watcher")) { _ in }
        while true {
            sleep(60)
            withExtendedLifetime(token) {}
        }
    }

    static func run(_ harness: inout Harness, quick: Bool) throws {
        let commits = quick ? 10_000 : 100_000
        print("\n## WAL and memory over \(commits) commits, 10,000 rows, 10 live queries here and a watcher in another process\n")
        let path = freshDatabasePath("wal-soak")
        defer { removeDatabase(at: path) }
        let store = try ScaleBenchmark.peopleStore(path: path, count: 10_000)
        try store.trackForeignWriters(tables: ["person"])
        let arrivals = LiveQueryBenchmark.Arrivals()
        let tokens = try WakeUpBenchmark.observe(store, count: 10, arrivals: arrivals)
        defer { tokens.forEach { $0.invalidate() } }
        let watcher = Process()
        watcher.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        watcher.arguments = ["--wal-watcher=\(path)"]
        try watcher.run()
        defer { watcher.terminate(); watcher.waitUntilExit() }
        Thread.sleep(forTimeInterval: 1)
        let other = RecordsBenchmark.openRaw(path)
        defer { sqlite3_close_v2(other) }
        sqlite3_busy_timeout(other, 5_000)
        let startRSS = residentMB()
        var largest = 0
        var rss: [Double] = []
        let started = DispatchTime.now().uptimeNanoseconds
        var done = 0
        while done < commits {
            let id = 1 + done * 7 % 10_000
            switch done % 100 {
            case 0:
                // The shell: 50 commits in one process, as fast as it goes.
                let shell = Process()
                shell.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
                shell.arguments = ["-cmd", ".timeout 5000", path]
                let input = Pipe()
                shell.standardInput = input
                shell.standardOutput = FileHandle.nullDevice
                try shell.run()
                input.fileHandleForWriting.write(Data((0..<50).map { "UPDATE person SET age = \($0 % 90) WHERE id = \(1 + (id + $0) % 10_000);\n" }.joined().utf8))
                try input.fileHandleForWriting.close()
                shell.waitUntilExit()
                done += 50
            case let step where step.isMultiple(of: 2):
                sqlite3_exec(other, "UPDATE person SET age = \(done % 90) WHERE id = \(id)", nil, nil, nil)
                done += 1
            default:
                try store.write { tx in
                    try tx.execute(sql: "UPDATE person SET age = ? WHERE id = ?", arguments: [.integer(Int64(done % 89)), .integer(Int64(id))])
                }
                done += 1
            }
            largest = max(largest, walSize(path))
            if done % (commits / 10) < 2 { rss.append(residentMB()) }
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        store.waitForObservers()
        // Another connection's TRUNCATE checkpoint, at once.
        let checkpointStarted = DispatchTime.now().uptimeNanoseconds
        var busy: Int32 = -1
        var statement: OpaquePointer?
        sqlite3_busy_timeout(other, 1_000)
        if sqlite3_prepare_v2(other, "PRAGMA wal_checkpoint(TRUNCATE)", -1, &statement, nil) == SQLITE_OK, sqlite3_step(statement) == SQLITE_ROW {
            busy = sqlite3_column_int(statement, 0)
        }
        sqlite3_finalize(statement)
        let checkpointSeconds = Double(DispatchTime.now().uptimeNanoseconds - checkpointStarted) / 1e9
        print("| figure | Sluice | target |")
        print("|---|---|---|")
        print(String(format: "| largest WAL | %.1f MB | ≤ %.1f MB | %@ |", Double(largest) / 1_048_576, Double(walBound) / 1_048_576,
                     largest <= walBound ? "ok" : "MISSED"))
        print(String(format: "| TRUNCATE by another connection (1 s busy timeout) | %@ in %.3f s | succeeds within 1 s | %@ |",
                     busy == 0 ? "succeeded" : "busy", checkpointSeconds, busy == 0 ? "ok" : "MISSED"))
        print(String(format: "| resident memory: start, every 10%%, end | %.0f → %@ MB | flat |", startRSS,
                     rss.map { String(format: "%.0f", $0) }.joined(separator: ", ")))
        print(String(format: "| commits per second (mixed writers, all observed) | %.0f | |", Double(commits) / seconds))
        harness.noteLine(String(format: "wal-soak: %d commits, largest WAL %.1f MB, TRUNCATE %@ in %.3f s, RSS %.0f → %.0f MB",
                                commits, Double(largest) / 1_048_576, busy == 0 ? "ok" : "busy", checkpointSeconds, startRSS, rss.last ?? 0))
    }
}
