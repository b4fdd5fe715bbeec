import Dispatch
import Foundation
import GRDB

/// GRDB, as the peer the wake-up benchmark prints beside Sluice (this file
/// alone imports it: both libraries name a `Row` and a `Database`).
enum GRDBPeer {
    /// Idle cost of a `DatabasePool` with `observations` `ValueObservation`s
    /// of the people table, measured by `measure` once their first values arrived.
    static func idleCost(
        path: String, observations: Int, seconds: Double,
        measure: (Double) -> (cpuPerMinute: Double, wakeUpsPerSecond: Double)
    ) throws -> (cpuPerMinute: Double, wakeUpsPerSecond: Double) {
        let pool = try DatabasePool(path: path)
        let queue = DispatchQueue(label: "grdb.delivery")
        let first = DispatchSemaphore(value: 0)
        var cancellables: [AnyDatabaseCancellable] = []
        for index in 0..<observations {
            let order = index.isMultiple(of: 2) ? "last_name" : "email"
            let observation = ValueObservation.tracking { db in
                try Row.fetchAll(db, sql: "SELECT * FROM person WHERE age >= ? ORDER BY \(order)", arguments: [20 + index]).count
            }
            cancellables.append(observation.start(in: pool, scheduling: .async(onQueue: queue),
                                                  onError: { _ in }, onChange: { _ in first.signal() }))
        }
        for _ in 0..<observations { first.wait() }
        let cost = measure(seconds)
        cancellables.forEach { $0.cancel() }
        return cost
    }
}

/// GRDB's answer to a window of a long list: a `ValueObservation` of a query
/// with a LIMIT, which runs the query again after each commit to its table
/// and hands back the whole array (no changeset, no count).
extension GRDBPeer {
    /// The rows of the query, each read whole, as their text (GRDB's `Row` is not `Sendable`).
    private static func texts(_ db: GRDB.Database, _ sql: String) throws -> [String] {
        try Row.fetchAll(db, sql: sql).map { $0["text"] ?? "" }
    }

    /// The median time from starting the observation to its first value.
    static func limitedFirstValue(path: String, sql: String, samples: Int) throws -> Double {
        let pool = try DatabasePool(path: path)
        let queue = DispatchQueue(label: "grdb.window")
        var times: [Double] = []
        for _ in 0..<samples {
            let first = DispatchSemaphore(value: 0)
            let start = DispatchTime.now().uptimeNanoseconds
            let cancellable = ValueObservation.tracking { db in try texts(db, sql) }
                .start(in: pool, scheduling: .async(onQueue: queue), onError: { _ in }, onChange: { _ in first.signal() })
            first.wait()
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
            cancellable.cancel()
        }
        return Harness.median(times)
    }

    /// The median time from `write` returning to the observation's new
    /// value, and the commits per second when they follow each other (until
    /// the value holds `end`, a message appended last), for writes through
    /// the same pool (GRDB sees only its own writes).
    static func limitedUpdates(path: String, sql: String, samples: Int, end: String,
                               write: @escaping (Int) -> (String, [(any DatabaseValueConvertible)?]))
        throws -> (afterReturn: Double, perSecond: Double) {
        let pool = try DatabasePool(path: path)
        let queue = DispatchQueue(label: "grdb.window")
        let changed = DispatchSemaphore(value: 0)
        let ended = DispatchSemaphore(value: 0)
        let cancellable = ValueObservation.tracking { db in try texts(db, sql) }
            .start(in: pool, scheduling: .async(onQueue: queue), onError: { _ in }, onChange: { texts in
                if texts.contains(end) { ended.signal() } else { changed.signal() }
            })
        changed.wait()
        var latencies: [Double] = []
        for sample in 0..<samples {
            let (statement, arguments) = write(sample)
            try pool.write { db in try db.execute(sql: statement, arguments: StatementArguments(arguments)) }
            let written = DispatchTime.now().uptimeNanoseconds
            changed.wait()
            latencies.append(Double(DispatchTime.now().uptimeNanoseconds - written) / 1e9)
        }
        let start = DispatchTime.now().uptimeNanoseconds
        for sample in 0..<samples {
            let (statement, arguments) = write(samples + sample)
            try pool.write { db in try db.execute(sql: statement, arguments: StatementArguments(arguments)) }
        }
        try pool.write { db in
            try db.execute(sql: "INSERT INTO message (conversation_id, sender, text, sent_at) VALUES (1, 'me', ?, '2100-01-01 00:00:00.000')", arguments: [end])
        }
        ended.wait()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        cancellable.cancel()
        return (Harness.median(latencies), Double(samples) / seconds)
    }
}
