import BenchSQLite
import Dispatch
import Foundation
import SluiceDemo
import Sluice

/// Sections, live aggregates and relationship queries (issue 11): their
/// first result and the latency of a single-row change, against a plain
/// fetch or a raw C re-run of the same query.
enum FeaturesBenchmark {
    static func run(_ harness: inout Harness, quick: Bool) throws {
        if !CommandLine.arguments.contains("--relationships-only") {
            try sectionsAndAggregates(&harness, count: quick ? 100_000 : 1_000_000, samples: quick ? 50 : 200)
        }
        try relationships(&harness, count: 100_000, samples: quick ? 5 : 15)
    }

    private static func note(_ harness: inout Harness, _ line: String) {
        print(line)
        harness.noteLine(line)
    }

    /// Median latency of `samples` writes, each waited for at `arrivals`:
    /// from calling `write` (its commit and fsync included), and after
    /// `write` returned (0 when the change arrived before).
    private static func latency(_ store: Store, _ arrivals: LiveQueryBenchmark.Arrivals, samples: Int,
                                _ write: (Int, Database) throws -> Void) throws -> LiveQueryBenchmark.Latency {
        var latency = LiveQueryBenchmark.Latency()
        for sample in 0..<samples {
            try latency.measure(store, arrivals) { tx in try write(sample, tx) }
        }
        return latency
    }

    private static func sectionsAndAggregates(_ harness: inout Harness, count: Int, samples: Int) throws {
        let path = freshDatabasePath("features")
        defer { removeDatabase(at: path) }
        let store = try ScaleBenchmark.peopleStore(path: path, count: count)
        let results = store.objects(Person.self).sorted(by: \.lastName)
        let label = count == 1_000_000 ? "1,000,000" : "\(count)"
        let fetchTime = try Harness.seconds { _ = try results.fetch() }

        // Sections by the initial of the last name (a closure: every row decoded, then grouped).
        let arrivals = LiveQueryBenchmark.Arrivals()
        var token: ObservationToken?
        let sectionedTime = try Harness.seconds {
            token = results.sectioned { String($0.lastName.prefix(1)) }.observe(on: LiveQueryBenchmark.deliveryQueue) { _ in arrivals.arrived() }
            try arrivals.wait()
        }
        let sectionLatency = try latency(store, arrivals, samples: samples) { sample, tx in
            let id = Int64(1 + (sample * 7_919) % count)
            // Half stay in place, half move to another section.
            let (sql, value) = sample % 2 == 0 ? ("UPDATE person SET email = ? WHERE id = ?", "s\(sample)@example.com")
                                                : ("UPDATE person SET last_name = ? WHERE id = ?", "\(["Adams", "Young", "Moss"][sample % 3])\(sample)")
            try tx.execute(sql: sql, arguments: [.text(value), .integer(id)])
        }
        token?.invalidate()
        harness.record("sections, \(label) people by last-name initial: first result vs a plain fetch", raw: [fetchTime], sluice: [sectionedTime],
                       target: 1.5, baseline: "Sluice's fetch() of the same rows")
        note(&harness, "| \(label) people in sections by initial: single-row change → section changes (median) | \(sectionLatency.summary) | | | ≤ 500 µs | \(sectionLatency.verdict(0.0005)) |")

        // A live sum of ages over every row.
        let sumArrivals = LiveQueryBenchmark.Arrivals()
        let sumTime = try Harness.seconds {
            token = results.aggregates.sum(of: \.age).observe(on: LiveQueryBenchmark.deliveryQueue) { _ in sumArrivals.arrived() }
            try sumArrivals.wait()
        }
        let rawSum = try Harness.seconds { _ = try results.aggregates.sum(of: \.age).fetch() }
        let sumLatency = try latency(store, sumArrivals, samples: samples) { sample, tx in
            try tx.execute(sql: "UPDATE person SET age = age + 1 WHERE id = ?", arguments: [.integer(Int64(1 + (sample * 7_919) % count))])
        }
        token?.invalidate()
        note(&harness, "| live sum of \(label) ages: first value \(Harness.format(sumTime)) (SQL sum(): \(Harness.format(rawSum))); single-row change → new sum (median) | \(sumLatency.summary) | | | ≤ 500 µs | \(sumLatency.verdict(0.0005)) |")
    }

    /// 100,000 people and as many packages; a live query of the packages to Oslo. Moving one person changes which
    /// packages match through the relationship: Sluice re-checks the packages that join the changed person (before and
    /// after the commit; it scanned every package before that), a raw client re-runs the JOIN.
    private static func relationships(_ harness: inout Harness, count: Int, samples: Int) throws {
        let path = freshDatabasePath("relationships")
        defer { removeDatabase(at: path) }
        var setup = Store.Configuration()
        setup.logsChanges = false
        let store = try Store(path: path, migrations: demoTables, configuration: setup)
        let cities = ["Oslo", "Bergen", "Rome", "Lyon", "Kyoto", "Lima", "Perth", "Quito", "Riga", "Tunis"]
        try store.write { tx in
            for index in 0..<count {
                try tx.execute(sql: "INSERT INTO person (id, first_name, last_name, city) VALUES (?, 'P', 'Q', ?)",
                               arguments: [.integer(Int64(index + 1)), .text(cities[index % cities.count])])
            }
            for index in 0..<count {
                try tx.execute(sql: "INSERT INTO package (id, recipient_id, created_at) VALUES (?, ?, '2026-01-01 00:00:00')",
                               arguments: [.integer(Int64(index + 1)), .integer(Int64((index * 7) % count + 1))])
            }
        }
        let arrivals = LiveQueryBenchmark.Arrivals()
        let token = try store.objects(Package.self).filter("recipient.city == 'Oslo'").sorted(by: \.id)
            .observe(on: LiveQueryBenchmark.deliveryQueue) { _ in arrivals.arrived() }
        try arrivals.wait()
        let moved = try latency(store, arrivals, samples: samples) { sample, tx in
            // A person not in Oslo moves there (or back): their packages enter (or leave) the result.
            let id = Int64(2 + sample % 9)
            try tx.execute(sql: "UPDATE person SET city = CASE city WHEN 'Oslo' THEN 'Bergen' ELSE 'Oslo' END WHERE id = ?", arguments: [.integer(id)])
        }
        token.invalidate()
        let db = RecordsBenchmark.openRaw(path)
        defer { sqlite3_close_v2(db) }
        let sql = "SELECT package.* FROM package JOIN person ON person.id = package.recipient_id WHERE person.city = 'Oslo' ORDER BY package.id"
        _ = rawPackages(db, sql)
        var raw: [Double] = []
        for _ in 0..<5 { raw.append(Harness.seconds { _ = rawPackages(db, sql) }) }
        let rerun = Harness.median(raw)
        let movedTime = moved.medianFromCalling
        note(&harness, String(format: "| 100,000 packages to Oslo (recipient.city), a recipient moves → changeset (from calling `write`) | re-run JOIN %@ | %@ | %.2f× of re-run | ≤ 2× | %@ |",
                              Harness.format(rerun), Harness.format(movedTime), movedTime / rerun, movedTime / rerun <= 2 ? "ok" : "MISSED"))
    }

    /// Runs a package query through the C API, reading every column of every row into a tuple.
    private static func rawPackages(_ db: OpaquePointer?, _ sql: String) -> [(Int64, Int64, Int64?, String)] {
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        var rows: [(Int64, Int64, Int64?, String)] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            let sender = sqlite3_column_type(statement, 2) == SQLITE_NULL ? nil : Optional(sqlite3_column_int64(statement, 2))
            rows.append((sqlite3_column_int64(statement, 0), sqlite3_column_int64(statement, 1), sender,
                         String(cString: sqlite3_column_text(statement, 3))))
        }
        return rows
    }
}
