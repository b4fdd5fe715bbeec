import BenchSQLite
import Dispatch
import Foundation
import SluiceDemo
import Sluice

/// What the change log costs writers, and what it buys observers of other
/// connections' commits.
enum ChangeLogBenchmark {
    static func store(_ count: Int, logs: Bool) throws -> (Store, String) {
        let path = freshDatabasePath("log-\(count)-\(logs)")
        var configuration = Store.Configuration()
        configuration.logsChanges = logs
        let store = try Store(path: path, configuration: configuration)
        try store.migrate(demoTables)
        let people = RecordsBenchmark.people(count)
        try store.write { tx in for person in people { try tx.insert(person) } }
        return (store, path)
    }

    /// Median time from another connection's single-row commit to the changeset.
    static func externalLatency(count: Int, tracked: Bool, samples: Int) throws -> (latency: Double, raw: Double) {
        let (store, path) = try store(count, logs: true)
        defer { removeDatabase(at: path) }
        if tracked { try store.trackForeignWriters(tables: ["person"]) }
        let latency = try LiveQueryBenchmark.externalLatency(store: store, path: path, count: count, samples: samples)
        return (latency, LiveQueryBenchmark.rawRequery(path))
    }

    /// A fresh migrated store, log on or off, and 100,000 people to insert.
    private static func emptyStore(_ name: String, logs: Bool) throws -> (Store, String, [Person]) {
        let path = freshDatabasePath(name)
        var configuration = Store.Configuration()
        configuration.logsChanges = logs
        let store = try Store(path: path, configuration: configuration)
        try store.migrate(demoTables)
        return (store, path, RecordsBenchmark.people(100_000))
    }

    /// Inserting 100,000 people in one transaction, log on or off.
    static func bulkInsert(logs: Bool) throws -> (seconds: Double, bytesPerRow: Double) {
        let (store, path, people) = try emptyStore("log-bulk-\(logs)", logs: logs)
        defer { removeDatabase(at: path) }
        let seconds = try Harness.seconds { try store.write { tx in for person in people { try tx.insert(person) } } }
        let bytes: Double = logs ? try store.read { db in
            try db.fetchRows(sql: "SELECT avg(length(tbl) + length(op) + 8 + 8 + coalesce(length(key), 0) + coalesce(length(old), 0) + coalesce(length(new), 0)) FROM sluice_change")
                .first.flatMap { Double(sqliteValue: $0[0]) } ?? 0
        } : 0
        return (seconds, bytes)
    }

    /// A bulk insert split into its statements and its commit (for profiling).
    static func bulkInsertPhases(logs: Bool) throws -> (inserts: Double, commit: Double) {
        let (store, path, people) = try emptyStore("log-phases-\(logs)", logs: logs)
        defer { removeDatabase(at: path) }
        var inserts = 0.0
        let total = try Harness.seconds {
            try store.write { tx in inserts = try Harness.seconds { for person in people { try tx.insert(person) } } }
        }
        return (inserts, total - inserts)
    }

    /// Median of single-row update transactions, log on or off.
    static func singleRowWrites(logs: Bool, samples: Int) throws -> Double {
        let (store, path) = try store(10_000, logs: logs)
        defer { removeDatabase(at: path) }
        var times: [Double] = []
        for sample in 0..<samples {
            let id = Int64(sample % 10_000 + 1)
            times.append(try Harness.seconds {
                try store.write { tx in try tx.execute(sql: "UPDATE person SET email = ? WHERE id = ?", arguments: [.text("w\(sample)@example.com"), .integer(id)]) }
            })
        }
        return Harness.median(times)
    }

    /// Another connection (the raw C API, as the shell is) on a table of
    /// 10,000 people, tracked or not: the median single-row update commit,
    /// and one transaction updating every row. What the foreign-writer triggers cost.
    static func foreignWrites(tracked: Bool, samples: Int) throws -> (single: Double, bulk: Double) {
        let (store, path) = try store(10_000, logs: true)
        defer { removeDatabase(at: path) }
        if tracked { try store.trackForeignWriters(tables: ["person"]) }
        let other = RecordsBenchmark.openRaw(path)
        defer { sqlite3_close_v2(other) }
        var times: [Double] = []
        for sample in 0..<samples {
            times.append(Harness.seconds {
                sqlite3_exec(other, "UPDATE person SET email = 'f\(sample)@example.com' WHERE id = \(sample % 10_000 + 1)", nil, nil, nil)
            })
        }
        let bulk = Harness.seconds { sqlite3_exec(other, "UPDATE person SET age = age + 1", nil, nil, nil) }
        return (Harness.median(times), bulk)
    }

    static func run(_ harness: inout Harness, quick: Bool, only part: String? = nil) throws {
        if part == "log-fallback" { return try runLatency(&harness, quick: quick, sizes: [10_000, 100_000], tracked: false) }
        if part == "log-foreign" {
            var single: ([Double], [Double]) = ([], []), bulk: ([Double], [Double]) = ([], [])
            for _ in 0..<(quick ? 2 : 3) {
                let plain = try foreignWrites(tracked: false, samples: quick ? 300 : 1_000)
                let tracked = try foreignWrites(tracked: true, samples: quick ? 300 : 1_000)
                single.0.append(plain.single); single.1.append(tracked.single)
                bulk.0.append(plain.bulk); bulk.1.append(tracked.bulk)
            }
            // What the foreign-writer triggers cost the shell and other tools (no target yet:
            // the figures say what tracking a table costs its other writers).
            for (name, pair) in [("another connection's single-row update commit: table tracked vs not (the triggers)", single),
                                 ("another connection's update of 10,000 rows in one transaction: tracked vs not", bulk)] {
                let (plain, tracked) = (Harness.median(pair.0), Harness.median(pair.1))
                harness.noteLine("| \(name) | \(Harness.format(plain)) | \(Harness.format(tracked)) | \(String(format: "%.2f×", tracked / plain)) | (information) | |")
            }
            return
        }
        var off: [Double] = [], on: [Double] = []
        var bytes = 0.0
        for _ in 0..<(quick ? 2 : 5) {
            off.append(try bulkInsert(logs: false).seconds)
            let logged = try bulkInsert(logs: true)
            on.append(logged.seconds)
            bytes = logged.bytesPerRow
        }
        harness.record("insert 100,000 rows in one transaction: change log on vs off", raw: off, sluice: on, target: 1.5, baseline: "log off")
        harness.noteLine(String(format: "| change log size per inserted row (payload: values as JSON, keys, ids) | | %.0f bytes | | (information) | |", bytes))
        if part == "log-bulk" { return }

        var writesOff: [Double] = [], writesOn: [Double] = []
        for _ in 0..<(quick ? 2 : 3) {
            writesOff.append(try singleRowWrites(logs: false, samples: quick ? 200 : 500))
            writesOn.append(try singleRowWrites(logs: true, samples: quick ? 200 : 500))
        }
        harness.record("single-row update transaction (synchronous = FULL): change log on vs off", raw: writesOff, sluice: writesOn, target: 1.2, baseline: "log off")

        try runLatency(&harness, quick: quick, sizes: quick ? [10_000, 100_000] : [10_000, 100_000, 1_000_000], tracked: true)
    }

    /// Other connections' commits → changesets, with the table tracked and (up to 100,000 rows) not.
    static func runLatency(_ harness: inout Harness, quick: Bool, sizes: [Int], tracked includeTracked: Bool) throws {
        for count in sizes {
            if includeTracked {
                let samples = count >= 1_000_000 ? 15 : (quick ? 10 : 30)
                let (tracked, raw) = try externalLatency(count: count, tracked: true, samples: samples)
                let bar = count >= 1_000_000 ? 0.015 : 0.010
                let line = String(format: "| another connection's single-row commit → changeset, %@ rows, table tracked (median) | re-run query %@ | %@ | %.3f× of re-run | ≤ %@ ms | %@ |",
                                  count.formatted(), Harness.format(raw), Harness.format(tracked), tracked / raw, bar == 0.015 ? "15" : "10", tracked <= bar ? "ok" : "MISSED")
                print(line)
                harness.noteLine(line)
            }
            if count <= 100_000 {
                let (fallback, fallbackRaw) = try externalLatency(count: count, tracked: false, samples: quick ? 5 : 10)
                let fallbackLine = String(format: "| same, table not tracked (scan, compare hashes, re-read changed rows) | re-run query %@ | %@ | %.2f× of re-run | ≤ 2× | %@ |",
                                          Harness.format(fallbackRaw), Harness.format(fallback), fallback / fallbackRaw, fallback / fallbackRaw <= 2 ? "ok" : "MISSED")
                print(fallbackLine)
                harness.noteLine(fallbackLine)
            }
        }
    }
}
