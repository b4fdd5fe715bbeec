import BenchSQLite
import Dispatch
import Foundation
import Sluice
import SluiceDemo

/// Live-query benchmarks: how fast a commit reaches a subscriber.
enum LiveQueryBenchmark {
    static let filterSQL = "age >= 30"
    static let orderSQL = "last_name, id"
    /// Where changesets are delivered: a queue of its own, since this
    /// command-line program blocks its main thread while it waits (the
    /// store's default, the main queue, would never run here).
    static let deliveryQueue = DispatchQueue(label: "sluice.benchmark.delivery")

    /// Times arrivals of changesets at a subscriber.
    final class Arrivals: @unchecked Sendable {
        // @unchecked Sendable: `times` is guarded by `lock`; the semaphore is thread-safe.
        private let lock = NSLock()
        private var times: [UInt64] = []
        let semaphore = DispatchSemaphore(value: 0)

        struct Timeout: Error {}

        /// Waits for the next arrival; fails instead of hanging.
        func wait() throws {
            guard semaphore.wait(timeout: .now() + 60) == .success else { throw Timeout() }
        }

        func arrived() {
            let now = DispatchTime.now().uptimeNanoseconds
            lock.lock()
            times.append(now)
            lock.unlock()
            semaphore.signal()
        }

        func last() -> UInt64 {
            lock.lock()
            defer { lock.unlock() }
            return times.last ?? 0
        }
    }

    /// Single-row change latencies, measured two ways: from calling
    /// `write` (the commit and its fsync included) and after `write`
    /// returned (what the store adds to the commit; 0 when the change
    /// arrived first: the changeset is computed on another thread).
    struct Latency {
        private(set) var fromCalling: [Double] = []
        private(set) var afterReturn: [Double] = []
        private(set) var writes: [Double] = []

        /// Commits `write` on `store`, waits for its change at `arrivals`, and records the times.
        mutating func measure(_ store: Store, _ arrivals: Arrivals, _ write: (Database) throws -> Void) throws {
            let start = DispatchTime.now().uptimeNanoseconds
            try store.write { tx in try write(tx) }
            let written = DispatchTime.now().uptimeNanoseconds
            try arrivals.wait()
            let arrived = arrivals.last()
            fromCalling.append(Double(arrived - start) / 1e9)
            afterReturn.append(max(0, Double(Int64(bitPattern: arrived &- written)) / 1e9))
            writes.append(Double(written - start) / 1e9)
        }

        var medianFromCalling: Double { Harness.median(fromCalling) }
        var medianAfterReturn: Double { Harness.median(afterReturn) }

        /// "601 µs from calling `write` (`write` alone 480 µs); 90 µs after it returned (12/200 before)".
        var summary: String {
            let early = afterReturn.filter { $0 == 0 }.count
            return "\(microseconds(medianFromCalling)) from calling `write` (`write` alone \(microseconds(Harness.median(writes)))); "
                + "\(microseconds(medianAfterReturn)) after it returned (\(early)/\(afterReturn.count) arrived before)"
        }

        /// The target checked on both figures.
        func verdict(_ target: Double) -> String {
            "from calling: \(medianFromCalling <= target ? "ok" : "MISSED"); after return: \(medianAfterReturn <= target ? "ok" : "MISSED")"
        }
    }

    static func makeStore(_ count: Int) throws -> (Store, String) {
        let path = freshDatabasePath("live-\(count)")
        let store = try Store(path: path, migrations: demoTables)
        let people = RecordsBenchmark.people(count)
        try store.write { tx in for person in people { try tx.insert(person) } }
        return (store, path)
    }

    /// The raw C baseline: re-running the live query's SQL and decoding it.
    static func rawRequery(_ path: String) -> Double {
        let db = RecordsBenchmark.openRaw(path)
        defer { sqlite3_close_v2(db) }
        _ = RecordsBenchmark.rawFetch(db, sql: "SELECT * FROM person WHERE \(filterSQL) ORDER BY \(orderSQL)")
        var samples: [Double] = []
        for _ in 0..<5 {
            samples.append(Harness.seconds { _ = RecordsBenchmark.rawFetch(db, sql: "SELECT * FROM person WHERE \(filterSQL) ORDER BY \(orderSQL)") })
        }
        return Harness.median(samples)
    }

    /// Latencies of a single-row update reaching a subscriber of a filtered, sorted query.
    static func latency(count: Int, samples: Int) throws -> (Latency, raw: Double) {
        let (store, path) = try makeStore(count)
        defer { removeDatabase(at: path) }
        let arrivals = Arrivals()
        let token = try store.objects(Person.self).filter(filterSQL).sorted(byKeyPath: "last_name").observe(on: deliveryQueue) { _ in arrivals.arrived() }
        try arrivals.wait()   // .initial
        var random = SystemRandomNumberGenerator()
        let lastNames = ["Müller", "Nguyễn", "Smith", "Öztürk", "García", "Kowalski", "Tanaka", "Ødegaard"]
        var latency = Latency()
        for sample in 0..<samples {
            // A row inside the filter: person i has age 18 + i % 70.
            var id = Int64.random(in: 1...Int64(count), using: &random)
            while (id - 1) % 70 < 12 { id = Int64.random(in: 1...Int64(count), using: &random) }
            // Alternate a modification in place and a move to another place.
            let sql = sample % 2 == 0 ? "UPDATE person SET email = ? WHERE id = ?" : "UPDATE person SET last_name = ? WHERE id = ?"
            let value = sample % 2 == 0 ? "sample\(sample)@example.com" : lastNames[sample % lastNames.count] + "\(sample)"
            try latency.measure(store, arrivals) { tx in try tx.execute(sql: sql, arguments: [.text(value), .integer(id)]) }
        }
        token.invalidate()
        return (latency, rawRequery(path))
    }

    /// The raw connection's commit failed (the benchmark would wait for a changeset that never comes).
    struct RawWriteFailed: Error {
        let message: String
    }

    /// Median time from another connection's commit to the changeset arriving.
    static func externalLatency(count: Int, samples: Int) throws -> Double {
        let (store, path) = try makeStore(count)
        defer { removeDatabase(at: path) }
        return try externalLatency(store: store, path: path, count: count, samples: samples)
    }

    /// Median time from a raw connection's single-row commit to the changeset
    /// of a filtered, sorted live query on `store` arriving.
    static func externalLatency(store: Store, path: String, count: Int, samples: Int) throws -> Double {
        let arrivals = Arrivals()
        let token = try store.objects(Person.self).filter(filterSQL).sorted(byKeyPath: "last_name").observe(on: deliveryQueue) { _ in arrivals.arrived() }
        try arrivals.wait()
        let other = RecordsBenchmark.openRaw(path)
        defer { sqlite3_close_v2(other) }
        var latencies: [Double] = []
        for sample in 0..<samples {
            var id = (sample * 7919) % count + 1
            while (id - 1) % 70 < 12 { id = id % count + 1 }
            guard sqlite3_exec(other, "UPDATE person SET email = 'other\(sample)@example.com' WHERE id = \(id)", nil, nil, nil) == SQLITE_OK else {
                throw RawWriteFailed(message: String(cString: sqlite3_errmsg(other)))
            }
            let committed = DispatchTime.now().uptimeNanoseconds
            try arrivals.wait()
            // The poller may deliver before this thread reads the clock: count that as 0.
            latencies.append(max(0, Double(arrivals.last()) - Double(committed)) / 1e9)
            usleep(UInt32.random(in: 0..<10_000))   // commits at random points of the polling period
        }
        token.invalidate()
        return Harness.median(latencies)
    }

    /// Median time from starting the sqlite3 shell (another process) that
    /// commits one update to the changeset arriving: an upper bound, as it
    /// includes the shell's start-up and commit. (Timing from the shell's
    /// exit is not possible: Foundation notices the exit after the changeset
    /// has already arrived.)
    static func otherProcessLatency(count: Int, samples: Int) throws -> Double? {
        guard let shell = ["/usr/bin/sqlite3", "/usr/local/bin/sqlite3"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
        let (store, path) = try makeStore(count)
        defer { removeDatabase(at: path) }
        let arrivals = Arrivals()
        let token = try store.objects(Person.self).filter(filterSQL).sorted(byKeyPath: "last_name").observe(on: deliveryQueue) { _ in arrivals.arrived() }
        try arrivals.wait()
        var latencies: [Double] = []
        for sample in 0..<samples {
            var id = (sample * 7919) % count + 1
            while (id - 1) % 70 < 12 { id = id % count + 1 }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: shell)
            process.arguments = ["-cmd", ".timeout 5000", path, "UPDATE person SET email = 'shell\(sample)@example.com' WHERE id = \(id)"]
            let started = DispatchTime.now().uptimeNanoseconds
            try process.run()
            try arrivals.wait()
            latencies.append(Double(arrivals.last() - started) / 1e9)
            process.waitUntilExit()
        }
        token.invalidate()
        return Harness.median(latencies)
    }

    /// Bulk insert of `count` rows with `queries` live queries open.
    static func bulkInsert(count: Int, queries: Int) throws -> (write: Double, delivered: Double) {
        let path = freshDatabasePath("bulk-\(queries)")
        defer { removeDatabase(at: path) }
        let store = try Store(path: path, migrations: demoTables)
        let people = RecordsBenchmark.people(count)
        let arrivals = Arrivals()
        let all = store.objects(Person.self)
        let variants = [all.sorted(byKeyPath: "last_name"), try all.filter("age >= 30").sorted(byKeyPath: "age"),
                        try all.filter("first_name BEGINSWITH 'Z'").sorted(byKeyPath: "email")]
        let tokens = variants.prefix(queries).map { $0.observe(on: deliveryQueue) { _ in arrivals.arrived() } }
        for _ in tokens { try arrivals.wait() }
        let start = DispatchTime.now().uptimeNanoseconds
        try store.write { tx in for person in people { try tx.insert(person) } }
        let written = DispatchTime.now().uptimeNanoseconds
        for _ in tokens { try arrivals.wait() }
        let delivered = DispatchTime.now().uptimeNanoseconds
        tokens.forEach { $0.invalidate() }
        return (Double(written - start) / 1e9, Double(delivered - start) / 1e9)
    }

    static func microseconds(_ seconds: Double) -> String { String(format: "%.0f µs", seconds * 1e6) }

    static func run(_ harness: inout Harness, quick: Bool) throws {
        var medians: [Int: Double] = [:]
        var afterReturnMedians: [Int: Double] = [:]
        for (count, samples) in [(1_000, quick ? 60 : 300), (10_000, quick ? 60 : 300), (100_000, quick ? 30 : 200)] {
            let (latency, raw) = try latency(count: count, samples: samples)
            let afterReturn = latency.medianAfterReturn
            let early = latency.afterReturn.filter { $0 == 0 }.count
            let endToEnd = latency.medianFromCalling
            medians[count] = endToEnd
            afterReturnMedians[count] = afterReturn
            let line = "| single-row update → changeset, \(count) rows: after `write` returns (median; \(early)/\(latency.afterReturn.count) arrived before it returned) "
                + "| re-run query \(Harness.format(raw)) | \(microseconds(afterReturn)) | | ≤ 1 ms at 100k | \(count == 100_000 ? (afterReturn <= 0.001 ? "ok" : "MISSED") : "") |"
            print(line)
            harness.noteLine(line)
            let whole = "| same, from calling `write` (commit included; `write` alone: \(microseconds(Harness.median(latency.writes)))) "
                + "| | \(microseconds(endToEnd)) | \(String(format: "%.3f×", endToEnd / raw)) of re-run | | |"
            print(whole)
            harness.noteLine(whole)
            harness.chart.add("one row changes → changeset, \(count.formatted(.number.grouping(.automatic))) rows (commit included)",
                              sluice: endToEnd, peer: raw, peerName: "re-running the query (C API)")
        }
        let afterSmall = afterReturnMedians[1_000] ?? 0
        let afterLine = afterSmall < 1e-6
            ? "| after-`write` median, 100k rows / 1k rows | | | n/a: at 1k the median changeset arrives before `write` returns | ≤ 3 | |"
            : String(format: "| after-`write` median, 100k rows / 1k rows | | | %.2f | ≤ 3 | %@ |",
                     (afterReturnMedians[100_000] ?? 0) / afterSmall, (afterReturnMedians[100_000] ?? 0) / afterSmall <= 3 ? "ok" : "MISSED")
        print(afterLine)
        harness.noteLine(afterLine)
        let ratio = (medians[100_000] ?? 0) / max(medians[1_000] ?? 1, 1e-9)
        let ratioLine = String(format: "| end-to-end median, 100k rows / 1k rows | | | %.2f | ≤ 3 | %@ |", ratio, ratio <= 3 ? "ok" : "MISSED")
        print(ratioLine)
        harness.noteLine(ratioLine)

        let external = try externalLatency(count: 10_000, samples: quick ? 20 : 60)
        print(String(format: "| other connection's commit → changeset, 10,000 rows | | %@ | | ≤ 50 ms |", Harness.format(external)))
        harness.noteLine(String(format: "| other connection's commit → changeset, 10,000 rows (median) | | %@ | | ≤ 50 ms | %@ |",
                                Harness.format(external), external <= 0.05 ? "ok" : "MISSED"))

        if let shell = try otherProcessLatency(count: 10_000, samples: quick ? 10 : 30) {
            let line = String(format: "| another process (the sqlite3 shell) commits → changeset, 10,000 rows (median, from starting the shell) | | %@ | | ≤ 50 ms | %@ |",
                              Harness.format(shell), shell <= 0.05 ? "ok" : "MISSED")
            print(line)
            harness.noteLine(line)
        }

        var none: [Double] = [], three: [Double] = [], threeDelivered: [Double] = []
        for _ in 0..<(quick ? 2 : 5) {
            none.append(try bulkInsert(count: 100_000, queries: 0).write)
            let result = try bulkInsert(count: 100_000, queries: 3)
            three.append(result.write)
            threeDelivered.append(result.delivered)
        }
        harness.record("insert 100,000 rows: 3 live queries open vs none", raw: none, sluice: three, target: 1.3, baseline: "no live query")
        harness.noteLine("| (same, until all 3 queries have delivered their changeset) | \(Harness.format(Harness.median(none))) | \(Harness.format(Harness.median(threeDelivered))) | \(String(format: "%.2f×", Harness.median(threeDelivered) / Harness.median(none))) | (information) | |")
    }
}
