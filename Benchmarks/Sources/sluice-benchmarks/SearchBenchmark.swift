import BenchSQLite
import Dispatch
import Foundation
import Sluice
import SluiceDemo

/// Full-text search: a ranked match over 100,000 and 1,000,000 people next
/// to the raw C API running the same FTS5 query on the same index, and a
/// single-row edit → live search changeset.
enum SearchBenchmark {
    /// One person in 1,000 is named Öztürk123 (the index removes diacritics: `ozturk123` finds them).
    static let query = "ozturk123"

    /// A store of `count` people with the demo's full-text index (first name,
    /// last name, city), change log off.
    static func store(path: String, count: Int) throws -> Store {
        var setup = Store.Configuration()
        setup.logsChanges = false
        let store = try Store(path: path, migrations: DemoSchema.migrations, configuration: setup)
        let people = RecordsBenchmark.people(count).enumerated().map { offset, person in
            var person = person
            person.lastName += String(offset % 1_000)
            return person
        }
        try store.write { tx in for person in people { try tx.insert(person) } }
        return store
    }

    static func run(_ harness: inout Harness, quick: Bool) throws {
        for count in quick ? [100_000] : [100_000, 1_000_000] {
            let path = freshDatabasePath("search-\(count)")
            defer { removeDatabase(at: path) }
            let store = try store(path: path, count: count)
            let label = count == 1_000_000 ? "1,000,000" : "100,000"
            // The same FTS5 query in C: the index's rows joined to the table, by rank.
            let raw = RecordsBenchmark.openRaw(path)
            defer { sqlite3_close_v2(raw) }
            let sql = """
                SELECT person.* FROM sluice_fts_person JOIN person ON person.rowid = sluice_fts_person.rowid \
                WHERE sluice_fts_person MATCH '\(query)' ORDER BY rank, person.id
                """
            let results = store.objects(Person.self).searching(query)
            var rawTimes: [Double] = [], sluiceTimes: [Double] = []
            var rawCount = 0, sluiceCount = 0
            for _ in 0..<(quick ? 7 : 21) {
                rawTimes.append(Harness.seconds { rawCount = RecordsBenchmark.rawFetch(raw, sql: sql).count })
                sluiceTimes.append(try Harness.seconds { sluiceCount = try results.fetch().count })
            }
            precondition(rawCount == count / 1_000 && sluiceCount == rawCount, "both find every Öztürk123")
            harness.record("ranked full-text match over \(label) people (\(rawCount) found), fetched and decoded", raw: rawTimes, sluice: sluiceTimes,
                           target: 1.2, baseline: "the same FTS5 query by rank in C")
            if count == (quick ? 100_000 : 1_000_000) { try live(store, label: label, count: count, harness: &harness, quick: quick) }
        }
    }

    /// A live search, sorted by name (changes re-checked row by row) and by
    /// relevance (re-run: every score moves), as single rows start and stop matching.
    static func live(_ store: Store, label: String, count: Int, harness: inout Harness, quick: Bool) throws {
        for (name, results) in [("sorted by first name", store.objects(Person.self).matching(query).sorted(by: \.firstName)),
                                ("by relevance", store.objects(Person.self).searching(query))] {
            let arrivals = LiveQueryBenchmark.Arrivals()
            let token = results.observe(on: LiveQueryBenchmark.deliveryQueue) { _ in arrivals.arrived() }
            try arrivals.wait()
            var latency = LiveQueryBenchmark.Latency()
            for sample in 0..<(quick ? 50 : 200) {
                // A row takes the name (it starts to match), then gives it back.
                var id = Int64(1 + (sample / 2 * 7_919) % count)
                if (id - 1) % 1_000 == 123 { id += 1 }    // not one of the Öztürk123s already
                let lastName = sample % 2 == 0 ? "Öztürk123" : "Smith\(sample)"
                try latency.measure(store, arrivals) { tx in
                    try tx.execute(sql: "UPDATE person SET last_name = ? WHERE id = ?", arguments: [.text(lastName), .integer(id)])
                }
            }
            token.invalidate()
            let line = "| live search at \(label) people, \(name): a row starts or stops matching → changeset (median) | \(latency.summary) | | | ≤ 1 ms after `write` returns | \(latency.medianAfterReturn <= 0.001 ? "ok" : "MISSED") |"
            print(line)
            harness.noteLine(line)
        }
    }
}
