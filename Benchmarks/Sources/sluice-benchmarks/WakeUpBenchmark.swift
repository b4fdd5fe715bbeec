import BenchSQLite
import Dispatch
import Foundation
import SluiceDemo
import Sluice

/// What observing costs while nothing happens, and how fast commits made
/// elsewhere (another connection, the `sqlite3` shell, a second `Store` on
/// the same file) reach a live query: `--only=wakeups`.
enum WakeUpBenchmark {
    typealias Arrivals = LiveQueryBenchmark.Arrivals

    /// CPU seconds (user + system) and voluntary context switches of the
    /// whole process (every thread) so far.
    static func usage() -> (cpu: Double, switches: Int) {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        return (cpu, usage.ru_nvcsw)
    }

    /// CPU time per minute and wake-ups per second while `seconds` pass
    /// with nothing committing (the measuring thread sleeps once), after
    /// seven seconds for the looks that follow the last write to end.
    static func idleCost(seconds: Double) -> (cpuPerMinute: Double, wakeUpsPerSecond: Double) {
        Thread.sleep(forTimeInterval: 7)
        let before = usage()
        Thread.sleep(forTimeInterval: seconds)
        let after = usage()
        return ((after.cpu - before.cpu) * 60 / seconds, Double(after.switches - before.switches - 1) / seconds)
    }

    /// Live queries over a people table: `count` of them, each a different filter and order.
    static func observe(_ store: Store, count: Int, arrivals: Arrivals) throws -> [ObservationToken] {
        let all = store.objects(Person.self)
        let tokens = try (0..<count).map { index in
            try all.filter("age >= \(20 + index)").sorted(byKeyPath: index.isMultiple(of: 2) ? "last_name" : "email")
                .observe(on: LiveQueryBenchmark.deliveryQueue) { _ in arrivals.arrived() }
        }
        for _ in tokens { try arrivals.wait() }
        return tokens
    }

    static func run(_ harness: inout Harness, quick: Bool) throws {
        let idleSeconds = quick ? 10.0 : 60.0
        print("\n## Idle while observing, 100,000 rows (\(Int(idleSeconds)) s each)\n")
        print("| while observing, idle | CPU per minute | wake-ups per second | target |")
        print("|---|---|---|---|")
        let path = freshDatabasePath("idle")
        defer { removeDatabase(at: path) }
        do {
            let store = try ScaleBenchmark.peopleStore(path: path, count: 100_000)
            for queries in [1, 10] {
                let arrivals = Arrivals()
                let tokens = try observe(store, count: queries, arrivals: arrivals)
                let cost = idleCost(seconds: idleSeconds)
                tokens.forEach { $0.invalidate() }
                let line = String(format: "| Sluice, %d live quer%@ | %.3f s | %.1f | 0 (≤ 1 with the safety poll) | %@ |",
                                  queries, queries == 1 ? "y" : "ies", cost.cpuPerMinute, cost.wakeUpsPerSecond, cost.wakeUpsPerSecond <= 1 ? "ok" : "MISSED")
                print(line)
                harness.noteLine(line)
            }
        }
        for queries in [1, 10] {
            let cost = try GRDBPeer.idleCost(path: path, observations: queries, seconds: idleSeconds) { idleCost(seconds: $0) }
            let line = String(format: "| GRDB DatabasePool, %d ValueObservation%@ | %.3f s | %.1f | | |",
                              queries, queries == 1 ? "" : "s", cost.cpuPerMinute, cost.wakeUpsPerSecond)
            print(line)
            harness.noteLine(line)
        }

        print("\n## Commits made elsewhere → changeset (median, p95)\n")
        let sizes = quick ? [10_000, 100_000] : [10_000, 100_000, 1_000_000]
        for count in sizes {
            let path = freshDatabasePath("foreign-\(count)")
            defer { removeDatabase(at: path) }
            let store = try ScaleBenchmark.peopleStore(path: path, count: count)
            try store.trackForeignWriters(tables: ["person"])
            let samples = quick ? 30 : 100
            let raw = try rawConnectionLatencies(store: store, path: path, count: count, samples: samples)
            report(&harness, "another connection (raw C API), tracked table, \(count.formatted()) rows", raw)
            if let shell = try shellLatencies(store: store, path: path, count: count, samples: samples) {
                report(&harness, "another process (a running sqlite3 shell), tracked table, \(count.formatted()) rows", shell.fromCommit)
                report(&harness, "the same, timed from sending the statement (the shell's parsing and commit included)", shell.fromSending)
            }
        }
        let secondCount = quick ? 100_000 : 1_000_000
        do {
            let path = freshDatabasePath("second-store")
            defer { removeDatabase(at: path) }
            let latencies = try secondStoreLatencies(path: path, count: secondCount, samples: quick ? 30 : 100)
            report(&harness, "a second Store on the same file, no tracking call, \(secondCount.formatted()) rows", latencies)
        }
        let (paced, pacedDelivered) = try burst(count: 200, spacing: 0.0036)
        let pacedLine = "| burst of 200 commits 3.6 ms apart (raw C API) | changesets delivered: \(pacedDelivered) of \(paced) | == commits | \(pacedDelivered == paced ? "ok" : "MISSED") |"
        print(pacedLine)
        harness.noteLine(pacedLine)
        let (tight, tightDelivered) = try burst(count: 200, spacing: 0)
        let tightLine = "| burst of 200 back-to-back commits (raw C API) | changesets delivered: \(tightDelivered) of \(tight) | (merged when closer than a wake-up) | |"
        print(tightLine)
        harness.noteLine(tightLine)
    }

    static func report(_ harness: inout Harness, _ name: String, _ latencies: [Double]) {
        let sorted = latencies.sorted()
        let median = Harness.median(sorted)
        let p95 = sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, sorted.count * 95 / 100)]
        let line = String(format: "| %@ | median %.3f ms, p95 %.3f ms | ≤ 1 ms, p95 ≤ 3 ms | %@ |",
                          name, median * 1000, p95 * 1000, median <= 0.001 && p95 <= 0.003 ? "ok" : "MISSED")
        print(line)
        harness.noteLine(line)
    }

    /// An id whose row the benchmark's live query (`age >= 20`) holds
    /// (person i is 18 + i % 70 years old).
    static func sampleID(_ sample: Int, count: Int) -> Int {
        var id = (sample * 7919) % count + 1
        while (id - 1) % 70 < 2 { id = id % count + 1 }
        return id
    }

    /// From a raw connection's commit returning to the changeset arriving.
    static func rawConnectionLatencies(store: Store, path: String, count: Int, samples: Int) throws -> [Double] {
        let arrivals = Arrivals()
        let tokens = try observe(store, count: 1, arrivals: arrivals)
        defer { tokens.forEach { $0.invalidate() } }
        let other = RecordsBenchmark.openRaw(path)
        defer { sqlite3_close_v2(other) }
        var latencies: [Double] = []
        for sample in 0..<samples {
            sqlite3_exec(other, "UPDATE person SET email = 'raw\(sample)@example.com' WHERE id = \(sampleID(sample, count: count))", nil, nil, nil)
            let committed = DispatchTime.now().uptimeNanoseconds
            try arrivals.wait()
            latencies.append(max(0, Double(arrivals.last()) - Double(committed)) / 1e9)
            usleep(UInt32.random(in: 1_000..<10_000))
        }
        return latencies
    }

    /// From a running `sqlite3` shell's commit to the changeset arriving
    /// (the commit's end is when the shell's `.print` after it is read),
    /// and from writing the UPDATE to its input (its parsing and commit included).
    static func shellLatencies(store: Store, path: String, count: Int, samples: Int) throws -> (fromCommit: [Double], fromSending: [Double])? {
        guard let shell = ["/usr/bin/sqlite3", "/usr/local/bin/sqlite3"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
        let arrivals = Arrivals()
        let tokens = try observe(store, count: 1, arrivals: arrivals)
        defer { tokens.forEach { $0.invalidate() } }
        let process = Process()
        // Line-buffered output (coreutils' stdbuf), so `.print` arrives when printed.
        process.executableURL = URL(fileURLWithPath: "/usr/bin/stdbuf")
        process.arguments = ["-oL", shell, "-cmd", ".timeout 5000", path]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        defer {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
        var fromCommit: [Double] = []
        var fromSending: [Double] = []
        for sample in 0..<samples {
            let statement = "UPDATE person SET email = 'shell\(sample)@example.com' WHERE id = \(sampleID(sample, count: count));\n.print done\n"
            let sent = DispatchTime.now().uptimeNanoseconds
            input.fileHandleForWriting.write(Data(statement.utf8))
            var printed = Data()
            while !printed.contains(UInt8(ascii: "\n")) {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                printed.append(chunk)
            }
            let committed = DispatchTime.now().uptimeNanoseconds
            try arrivals.wait()
            fromCommit.append(max(0, Double(arrivals.last()) - Double(committed)) / 1e9)
            fromSending.append(Double(arrivals.last() - sent) / 1e9)
            usleep(UInt32.random(in: 1_000..<10_000))
        }
        return (fromCommit, fromSending)
    }

    /// From a second store's `write` returning to the first store's changeset arriving.
    static func secondStoreLatencies(path: String, count: Int, samples: Int) throws -> [Double] {
        _ = try ScaleBenchmark.peopleStore(path: path, count: count)
        // Two stores as an app and its widget open them: defaults, no tracking call.
        let observed = try Store(path: path)
        let writer = try Store(path: path)
        let arrivals = Arrivals()
        let tokens = try observe(observed, count: 1, arrivals: arrivals)
        defer { tokens.forEach { $0.invalidate() } }
        var latencies: [Double] = []
        for sample in 0..<samples {
            let id = Int64(sampleID(sample, count: count))
            try writer.write { tx in try tx.execute(sql: "UPDATE person SET email = ? WHERE id = ?", arguments: [.text("second\(sample)@example.com"), .integer(id)]) }
            let committed = DispatchTime.now().uptimeNanoseconds
            try arrivals.wait()
            latencies.append(max(0, Double(arrivals.last()) - Double(committed)) / 1e9)
            usleep(UInt32.random(in: 1_000..<10_000))
        }
        return latencies
    }

    /// `count` single-row commits by a raw connection, `spacing` seconds
    /// apart, on a tracked table; returns the commits and the changesets that arrived.
    static func burst(count: Int, spacing: Double) throws -> (Int, Int) {
        let path = freshDatabasePath("burst")
        defer { removeDatabase(at: path) }
        let store = try ScaleBenchmark.peopleStore(path: path, count: 10_000)
        try store.trackForeignWriters(tables: ["person"])
        let arrivals = SyncBenchmark.Arrivals()
        let token = try store.objects(Person.self).filter("age >= 20").observe(on: LiveQueryBenchmark.deliveryQueue) { _ in arrivals.arrived() }
        while arrivals.count == 0 { usleep(1_000) }
        let other = RecordsBenchmark.openRaw(path)
        defer { sqlite3_close_v2(other) }
        sqlite3_exec(other, "PRAGMA synchronous = NORMAL", nil, nil, nil)
        for commit in 0..<count {
            sqlite3_exec(other, "UPDATE person SET email = 'burst\(commit)@example.com' WHERE id = \(sampleID(commit, count: 10_000))", nil, nil, nil)
            if spacing > 0 { usleep(UInt32(spacing * 1e6)) }
        }
        store.waitForObservers()
        LiveQueryBenchmark.deliveryQueue.sync {}
        token.invalidate()
        return (count, arrivals.count - 1)
    }
}
