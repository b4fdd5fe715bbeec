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
