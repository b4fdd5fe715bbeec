import BenchSQLite
import Dispatch
import Foundation
import Sluice
import SluiceDemo

/// Windows of a conversation of 10,000,000 messages (issue 47): the first
/// 50 from `observe`, a commit's changeset, maintenance throughput of
/// windows of 50, 10,000 and 100,000 rows, and the memory a window holds;
/// beside the raw C API re-running the LIMIT query and GRDB's
/// `ValueObservation` of it, in the same run.
enum WindowBenchmark {
    static let windowSQL = "SELECT * FROM message WHERE conversation_id = 1 ORDER BY sent_at DESC, id DESC LIMIT 50"

    /// A store whose conversation 1 holds `count` messages, one a second,
    /// written in one statement by the C API (the store's own writes come later).
    static func conversation(path: String, count: Int) throws -> Store {
        do { _ = try Store(path: path, migrations: demoTables) }
        let raw = RecordsBenchmark.openRaw(path)
        defer { sqlite3_close_v2(raw) }
        sqlite3_exec(raw, """
            WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < \(count))
            INSERT INTO message (conversation_id, sender, text, sent_at)
            SELECT 1, CASE x % 2 WHEN 0 THEN 'me' ELSE 'Ada' END, 'message ' || x, strftime('%Y-%m-%d %H:%M:%f', 1700000000 + x, 'unixepoch') FROM n
            """, nil, nil, nil)
        sqlite3_exec(raw, "PRAGMA wal_checkpoint(TRUNCATE)", nil, nil, nil)
        return try Store(path: path)
    }

    static func messages(_ store: Store) -> Results<Message> {
        store.objects(Message.self).filter(Column("conversation_id") == Int64(1)).sorted(by: \.sentAt, \.id)
    }

    /// The raw C API running the window's query again (what a LIMIT re-query costs per commit).
    static func rawRequery(_ path: String, samples: Int, sql: String = windowSQL) -> Double {
        let db = RecordsBenchmark.openRaw(path)
        defer { sqlite3_close_v2(db) }
        var times: [Double] = []
        for _ in 0..<samples {
            times.append(Harness.seconds {
                var statement: OpaquePointer?
                sqlite3_prepare_v2(db, sql, -1, &statement, nil)
                var rows = 0
                while sqlite3_step(statement) == SQLITE_ROW {
                    _ = RecordsBenchmark.columnText(statement, 3)
                    rows += 1
                }
                sqlite3_finalize(statement)
                precondition(rows == 50)
            })
        }
        return Harness.median(times)
    }

    static func run(_ harness: inout Harness, quick: Bool) throws {
        let count = quick ? 1_000_000 : 10_000_000
        let label = count == 10_000_000 ? "10,000,000" : "1,000,000"
        let path = freshDatabasePath("window")
        defer { removeDatabase(at: path) }
        let setup = try Harness.seconds { _ = try conversation(path: path, count: count) }
        print("window: \(label) messages written in \(Harness.format(setup))")
        let store = try Store(path: path)
        let results = messages(store)
        let queue = LiveQueryBenchmark.deliveryQueue

        // The first 50, from `observe`; the count after them.
        let arrivals = LiveQueryBenchmark.Arrivals()
        let baseline = ScaleBenchmark.allocatedBytes()
        ScaleBenchmark.resetPeak()
        let rssBase = ScaleBenchmark.residentBytes().now
        // The first list a store observes starts its observation queue, opens its snapshot connections and its file watch.
        let cold: Double
        do {
            let fresh = try Store(path: path)
            let start = DispatchTime.now().uptimeNanoseconds
            let first = messages(fresh).window(.last(50)).observe(on: queue) { _ in arrivals.arrived() }
            try arrivals.wait()
            cold = Double(arrivals.last() - start) / 1e9
            try arrivals.wait()
            first.invalidate()
            fresh.waitForObservers()
        }
        // Another list of the app already observed (the store's observation machinery running).
        let other = store.objects(AppState.self).observe(on: queue) { _ in }
        store.waitForObservers()
        var firsts: [Double] = []
        var counted: [Double] = []
        var token: ObservationToken?
        for _ in 0..<(quick ? 3 : 5) {
            token?.invalidate()
            store.waitForObservers()
            let start = DispatchTime.now().uptimeNanoseconds
            token = results.window(.last(50)).observe(on: queue) { _ in arrivals.arrived() }
            try arrivals.wait()
            firsts.append(Double(arrivals.last() - start) / 1e9)
            try arrivals.wait()   // the position: the count, from an index walk
            counted.append(Double(arrivals.last() - start) / 1e9)
        }
        store.waitForObservers()
        let held = ScaleBenchmark.allocatedBytes() - baseline
        let rss = ScaleBenchmark.residentBytes().now - rssBase
        let raw = rawRequery(path, samples: 21)
        let grdbFirst = try GRDBPeer.limitedFirstValue(path: path, sql: windowSQL, samples: quick ? 3 : 5)
        let first = Harness.median(firsts)

        // A commit → the window's changeset: appended, edited inside, deleted inside, crossing the edge.
        var latencies: [String: LiveQueryBenchmark.Latency] = [:]
        let samples = quick ? 30 : 100
        var nextID = Int64(count)
        for sample in 0..<samples {
            nextID += 1
            let id = nextID
            try latencies["a message appended", default: .init()].measure(store, arrivals) { tx in
                try tx.execute(sql: "INSERT INTO message (id, conversation_id, sender, text, sent_at) VALUES (?, 1, 'me', 'new', ?)",
                               arguments: [.integer(id), Date().sqliteValue])
            }
            try latencies["an edit inside the window", default: .init()].measure(store, arrivals) { tx in
                try tx.execute(sql: "UPDATE message SET text = ? WHERE id = ?", arguments: [.text("edited \(sample)"), .integer(id)])
            }
            try latencies["a delete inside the window", default: .init()].measure(store, arrivals) { tx in
                try tx.execute(sql: "DELETE FROM message WHERE id = ?", arguments: [.integer(id)])
            }
            try latencies["an old message crossing into the window", default: .init()].measure(store, arrivals) { tx in
                try tx.execute(sql: "UPDATE message SET sent_at = ? WHERE id = ?", arguments: [Date().sqliteValue, .integer(Int64(1 + sample * 7_919))])
            }
        }
        token?.invalidate()
        other.invalidate()
        store.waitForObservers()
        var end = 0
        let grdb = try GRDBPeer.limitedUpdates(path: path, sql: windowSQL, samples: quick ? 30 : 100, end: "grdb end") { sample in
            ("UPDATE message SET text = ? WHERE id = ?", ["grdb \(sample)", count - sample % 40])
        }

        // Throughput: edits inside windows of 50, 10,000 and 100,000 rows, committed back to back,
        // one row a commit (bounded by the commit itself) and 100 rows a commit (the window's own work).
        var throughput: [String] = []
        for size in [50, 10_000, 100_000] {
            for rowsPerCommit in [1, Swift.min(100, size)] {
                let done = DispatchSemaphore(value: 0)
                end += 1
                let marker = "end \(end)"
                let token = results.window(.last(size)).observe(on: queue) { change in
                    if change.results?.last?.text == marker { done.signal() } else { arrivals.arrived() }
                }
                try arrivals.wait()
                try arrivals.wait()   // counted
                let commits = rowsPerCommit == 1 ? (quick ? 500 : 2_000) : (quick ? 50 : 200)
                let start = DispatchTime.now().uptimeNanoseconds
                for commit in 0..<commits {
                    try store.write { tx in
                        for row in 0..<rowsPerCommit {
                            let id = Int64(count - ((commit * rowsPerCommit + row) * 7_919) % size)
                            try tx.execute(sql: "UPDATE message SET text = ? WHERE id = ?", arguments: [.text("w\(commit)"), .integer(id)])
                        }
                    }
                }
                try store.write { tx in
                    try tx.execute(sql: "INSERT INTO message (conversation_id, sender, text, sent_at) VALUES (1, 'me', ?, '2200-01-01 00:00:00.000')",
                                   arguments: [.text(marker)])
                }
                let wrote = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                guard done.wait(timeout: .now() + 120) == .success else { throw LiveQueryBenchmark.Arrivals.Timeout() }
                let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                token.invalidate()
                store.waitForObservers()
                while arrivals.semaphore.wait(timeout: .now()) == .success {}
                let rate = Double(commits * rowsPerCommit) / seconds
                throughput.append("| window of \(size) rows of \(label): edits inside, \(rowsPerCommit) row(s) a commit, back to back until the last changeset "
                    + "| \(String(format: "%.0f", rate)) updates/s (\(String(format: "%.0f", Double(commits) / seconds)) commits/s; the last changeset "
                    + "\(LiveQueryBenchmark.microseconds(seconds - wrote)) after the last write returned) | | | ≥ 15,000/s | \(rate >= 15_000 ? "ok" : "MISSED") |")
            }
        }

        // Windows deep in the list (a scroll bar dragged down): the rows at a position, then edits inside, 50 a commit.
        var deep: [String] = []
        // Another list open meanwhile, as for the first rows above (a store's first list pays for starting its observation).
        let keepAlive = store.objects(AppState.self).observe(on: queue) { _ in }
        defer { keepAlive.invalidate() }
        for offset in [10_000, 100_000, count / 2] {
            let done = DispatchSemaphore(value: 0)
            end += 1
            let marker = "deep end \(end)"
            let start = DispatchTime.now().uptimeNanoseconds
            let token = results.window(.offset(offset, count: 50)).observe(on: queue) { change in
                if change.results?.contains(where: { $0.text == marker }) == true { done.signal() } else { arrivals.arrived() }
            }
            try arrivals.wait()
            let firstRows = Double(arrivals.last() - start) / 1e9
            try arrivals.wait()   // counted
            let ids = try store.read { db in
                try db.fetchRows(sql: "SELECT id FROM message WHERE conversation_id = 1 ORDER BY sent_at, id LIMIT 50 OFFSET ?", arguments: [.integer(Int64(offset))])
                    .compactMap { Int64(sqliteValue: $0[0]) }
            }
            let commits = quick ? 50 : 200
            let began = DispatchTime.now().uptimeNanoseconds
            for commit in 0..<commits {
                try store.write { tx in
                    for id in ids { try tx.execute(sql: "UPDATE message SET text = ? WHERE id = ?", arguments: [.text("d\(commit)"), .integer(id)]) }
                }
            }
            try store.write { tx in try tx.execute(sql: "UPDATE message SET text = ? WHERE id = ?", arguments: [.text(marker), .integer(ids[0])]) }
            guard done.wait(timeout: .now() + 120) == .success else { throw LiveQueryBenchmark.Arrivals.Timeout() }
            let rate = Double(commits * ids.count) / (Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9)
            token.invalidate()
            store.waitForObservers()
            while arrivals.semaphore.wait(timeout: .now()) == .success {}
            let rawOffset = rawRequery(path, samples: 5, sql: "SELECT * FROM message WHERE conversation_id = 1 ORDER BY sent_at, id LIMIT 50 OFFSET \(offset)")
            deep.append("| window of 50 at row \(offset) of \(label): first rows from observe (the row at the offset found by an index walk of rowids, then a keyset read), beside the C API's LIMIT 50 OFFSET query; "
                + "edits inside, 50 a commit | \(Harness.format(rawOffset)) | \(Harness.format(firstRows)); \(String(format: "%.0f", rate)) updates/s | | ≥ 15,000/s | "
                + "\(rate >= 15_000 ? "ok" : "MISSED") |")
        }

        var lines = [
            "| window: the last 50 of \(label) messages, first rows from observe (beside: the C API's LIMIT 50 query) | \(LiveQueryBenchmark.microseconds(raw)) | "
                + "\(LiveQueryBenchmark.microseconds(first)) | \(String(format: "%.1f×", first / raw)) | ≤ 20 ms | \(first <= 0.020 ? "ok" : "MISSED") |",
            "| window: the same, as the first list the store observes (starts its observation queue, snapshot connections, file watch) | \(Harness.format(cold)) | | | | |",
            "| window: the count beside the first rows (\(label), an index walk, delivered after them) | \(Harness.format(Harness.median(counted))) from observe | | | | |",
            "| window: GRDB ValueObservation of the same LIMIT 50 query, first value | \(Harness.format(grdbFirst)) | | | | |",
            "| window of 50 over \(label) messages: memory held (allocator; RSS) | \(held / 1_024) KiB; \(rss / 1_024) KiB | | | ≤ 20 MB | \(rss <= 20 << 20 ? "ok" : "MISSED") |",
        ]
        for (name, latency) in latencies.sorted(by: { $0.key < $1.key }) {
            lines.append("| window of 50 over \(label): \(name) → changeset (median) | \(latency.summary) | | | ≤ 1 ms after write | \(latency.verdict(0.001)) |")
        }
        lines.append("| GRDB ValueObservation of LIMIT 50 (re-runs the query, no changeset): an edit → new value (median after write) | \(LiveQueryBenchmark.microseconds(grdb.afterReturn)); \(String(format: "%.0f", grdb.perSecond)) commits/s back to back | | | | |")
        lines += throughput + deep
        harness.chart.add("the last 50 of \(label) messages, from observe", sluice: first, peer: grdbFirst, peerName: "GRDB ValueObservation, LIMIT 50")
        if let appended = latencies["a message appended"] {
            harness.chart.add("a message appended → changeset of 50 of \(label) (after write)", sluice: appended.medianAfterReturn, peer: grdb.afterReturn,
                              peerName: "GRDB ValueObservation, LIMIT 50: the new array")
        }
        for line in lines {
            print(line)
            harness.noteLine(line)
        }
    }
}
