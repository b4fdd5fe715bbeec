import BenchSQLite
import Dispatch
import Foundation
import Sluice
import SluiceDemo

/// A live query at a million rows: what it costs beside the app's own
/// array (bytes per row, steady and peak), how long its first result takes
/// next to a plain fetch, and how fast a single-row change arrives.
enum ScaleBenchmark {
    /// Bytes the allocator has handed out and not taken back (glibc's
    /// `mallinfo2`): what the process holds, not what the OS lent it.
    static func allocatedBytes() -> Int {
        Int(_bench_allocated_bytes())
    }

    /// Resets the kernel's peak-RSS mark (`VmHWM`) to the current RSS.
    static func resetPeak() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    /// The resident set now and its peak since the last reset, in bytes.
    static func residentBytes() -> (now: Int, peak: Int) {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (0, 0) }
        func field(_ name: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
            return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
        }
        return (field("VmRSS"), field("VmHWM"))
    }

    /// The size of a database's WAL file, in bytes (0 when there is none).
    static func walSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path + "-wal"))?[.size] as? Int) ?? 0
    }

    static func perRow(_ bytes: Int, _ count: Int) -> String { String(format: "%.0f B/row", Double(bytes) / Double(count)) }

    /// A store of `count` people (8,000 distinct last names), change log off, freshly reopened.
    static func peopleStore(path: String, count: Int) throws -> Store {
        var setup = Store.Configuration()
        setup.logsChanges = false
        do {
            let store = try Store(path: path, migrations: demoTables, configuration: setup)
            let people = RecordsBenchmark.people(count).enumerated().map { offset, person in
                var person = person
                person.lastName += String(offset % 1_000)
                return person
            }
            try store.write { tx in for person in people { try tx.insert(person) } }
        }
        return try Store(path: path, configuration: setup)
    }

    static func run(_ harness: inout Harness, quick: Bool) throws {
        let count = quick ? 100_000 : 1_000_000
        let path = freshDatabasePath("scale")
        defer { removeDatabase(at: path) }
        let store = try peopleStore(path: path, count: count)
        let results = store.objects(Person.self).sorted(by: \.lastName)

        // The app's own array.
        _ = try store.read { db in try db.fetchCount(Person.self) }
        let beforeFetch = allocatedBytes()
        resetPeak()
        let peakBase = residentBytes().now
        var fetched: [Person] = []
        let fetchTime = try Harness.seconds { fetched = try results.fetch() }
        let fetchBytes = allocatedBytes() - beforeFetch
        let fetchPeak = residentBytes().peak - peakBase
        precondition(fetched.count == count)

        // A live query over the same rows, beside that array.
        let arrivals = LiveQueryBenchmark.Arrivals()
        let beforeLive = allocatedBytes()
        resetPeak()
        let livePeakBase = residentBytes().now
        var token: ObservationToken?
        let liveTime = try Harness.seconds {
            token = results.observe(on: LiveQueryBenchmark.deliveryQueue) { _ in arrivals.arrived() }
            try arrivals.wait()
        }
        LiveQueryBenchmark.deliveryQueue.sync {}   // the initial result delivered and let go
        store.waitForObservers()
        let liveBytes = allocatedBytes() - beforeLive
        let livePeak = residentBytes().peak - livePeakBase

        // Single-row changes, half in place, half moving.
        var latency = LiveQueryBenchmark.Latency()
        for sample in 0..<(quick ? 50 : 200) {
            let id = Int64(1 + (sample * 7_919) % count)
            let sql = sample % 2 == 0 ? "UPDATE person SET email = ? WHERE id = ?" : "UPDATE person SET last_name = ? WHERE id = ?"
            let value = sample % 2 == 0 ? "scale\(sample)@example.com" : "Moved\(sample)"
            try latency.measure(store, arrivals) { tx in try tx.execute(sql: sql, arguments: [.text(value), .integer(id)]) }
        }
        token?.invalidate()
        withExtendedLifetime(fetched) {}

        let label = count == 1_000_000 ? "1,000,000" : "\(count)"
        harness.record("live query, \(label) people by last name: first result vs a plain fetch", raw: [fetchTime], sluice: [liveTime], target: 1.5,
                       baseline: "Sluice's fetch() of the same rows")
        let lines = [
            "| \(label) people: the app's [Person] from fetch() | \(perRow(fetchBytes, count)) held, \(perRow(fetchPeak, count)) peak RSS | | | | |",
            "| \(label) people: a live query beside it | \(perRow(liveBytes, count)) held, \(perRow(livePeak, count)) peak RSS | | | ≤ 100 B/row | \(liveBytes <= 100 * count ? "ok" : "MISSED") |",
            "| \(label) people: single-row change → changeset (median; WAL \(walSize(path) / 1_024) KiB after) | \(latency.summary) | | | ≤ 500 µs | \(latency.verdict(0.0005)) |",
        ]
        for line in lines {
            print(line)
            harness.noteLine(line)
        }
    }
}
