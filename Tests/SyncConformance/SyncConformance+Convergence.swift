import Foundation
import Sluice
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport

/// The property over random workloads: three devices edit offline at random (inserts,
/// updates of the same columns, deletes that cascade, delete-then-reinsert of the same id,
/// packages pointing at people created elsewhere), sync in random orders, and end up with
/// the same rows as each other and the service. On every device two live queries (people
/// by name; packages for Oslo, through the recipient relationship) are rebuilt from their
/// changesets only: after every changeset the rebuilt array equals the state delivered with
/// it, and whenever the device is quiet it equals the query re-run on an independent plain
/// SQLite connection.
extension SyncConformance {
    /// The seeds the scenario list runs.
    static let convergenceSeeds: [UInt64] = Array(1...8)
    /// The seeds of the same from snapshots (the rows endpoint).
    static let snapshotSeeds: [UInt64] = Array(9...12)

    /// Random offline edits on three devices (each configured by `configure`) converge.
    public static func randomOfflineEdits(_ service: any ConformanceService, seed: UInt64,
                                          configure: @escaping (inout SyncConfiguration) -> Void = { _ in }) async throws {
        let token = try await service.newToken()
        let devices = try (0..<3).map { _ in try Device(service, token: token, configure) }
        let mirrors = try devices.map { device in
            [
                LiveMirror(device, device.store.rows(in: "person").sorted(by: [Ordering("last_name"), Ordering("id")]),
                           sql: "SELECT * FROM person ORDER BY last_name, id"),
                LiveMirror(device, try device.store.rows(in: "package").filter("recipient.city == 'Oslo'").sorted(by: [Ordering("id")]),
                           sql: "SELECT package.* FROM package JOIN person ON person.id = package.recipient_id WHERE person.city = 'Oslo' ORDER BY package.id"),
            ]
        }
        func checkMirrors(_ context: String) throws {
            for mirror in mirrors.joined() { try mirror.check("seed \(seed), \(context)") }
        }
        try checkMirrors("initial")
        var random = SeededRandom(state: seed)
        let cities = ["Oslo", "Bergen", "Tromsø", "Riga"]
        for _ in 0..<6 {
            for device in devices {
                for _ in 0..<(1 + random.next(4)) {
                    let people = try device.rows("SELECT id FROM person ORDER BY id").compactMap { Int64($0) }
                    let pick = people.isEmpty ? nil : people[random.next(people.count)]
                    switch random.next(7) {
                    case 0, 1:
                        try device.sql("INSERT INTO person (first_name, last_name, city, age) VALUES (?, 'R', ?, ?)",
                                       [.text("p\(random.next(1000))"), .text(cities[random.next(cities.count)]), .integer(Int64(random.next(90)))])
                    case 2:
                        if let pick { try device.sql("UPDATE person SET city = ? WHERE id = ?", [.text(cities[random.next(cities.count)]), .integer(pick)]) }
                    case 3:
                        if let pick { try device.sql("UPDATE person SET age = ?, email = ? WHERE id = ?", [.integer(Int64(random.next(90))), .text("e\(random.next(9))"), .integer(pick)]) }
                    case 4:
                        if let pick { try device.sql("DELETE FROM person WHERE id = ?", [.integer(pick)]) }
                    case 5:
                        if let pick {
                            try device.sql("INSERT INTO package (recipient_id, sender_id, created_at) VALUES (?, ?, '2026-11-22')",
                                           [.integer(pick), people.isEmpty ? .null : .integer(people[random.next(people.count)])])
                        }
                    default:
                        if let pick {
                            try await device.store.write { db in
                                try db.execute(sql: "DELETE FROM person WHERE id = ?", arguments: [.integer(pick)])
                                try db.execute(sql: "INSERT INTO person (id, first_name, last_name) VALUES (?, 'again', 'R')", arguments: [.integer(pick)])
                            }
                        }
                    }
                }
            }
            // Some devices sync, in a random order.
            for index in [0, 1, 2].shuffled(using: &random) where random.next(3) > 0 {
                try await devices[index].client.sync()
            }
            try checkMirrors("after a round")
        }
        for _ in 0..<2 {
            for device in devices { try await device.client.sync() }
        }
        try checkMirrors("synced")
        try expect(try !devices[0].content().isEmpty, "seed \(seed): nothing left to compare")
        try await expectAlike(devices, service, "seed \(seed)")
        for (index, device) in devices.enumerated() {
            let pending = try await device.client.pendingChangeCount()
            try expect(pending == 0, "seed \(seed): device \(index) has \(pending) pending")
        }
        try expect(mirrors.allSatisfy { $0[0].changesets > 0 }, "seed \(seed): a device's people list saw no changeset")
    }
}

extension SyncConformance {
    static let breakingSeeds: [UInt64] = [11, 12, 13, 14]

    /// The convergence property through what breaks sync: a store file copied mid-run (a
    /// new device starts from the copy), people deleted by the `sqlite3` shell (foreign keys
    /// off: the service applies the ON DELETE actions), a tool whose clock runs three hours
    /// ahead and spells columns in capitals, and concurrent edits of the same rows. Every
    /// device ends alike, with an id of its own and nothing quarantined.
    static func convergeThroughCopiesShellDeletesAndSkewedClocks(_ service: any ConformanceService, seed: UInt64) async throws {
        let token = try await service.newToken()
        let folder = TemporaryDatabase()
        var devices = try (0..<3).map { try Device(service, token: token, path: folder.url("d\($0).sqlite").path) }
        var random = SeededRandom(state: seed)
        let cities = ["Oslo", "Bergen", "Riga"]
        let tool = service.transport(token: try await service.newToken())
        var toolLocal: Int64 = 0
        for round in 0..<6 {
            if round == 2 {
                // A copy of device 0's file, as a backup restored on a new phone.
                let copy = folder.url("copy.sqlite").path
                try devices[0].shell("VACUUM INTO '\(copy)';")
                devices.append(try Device(service, token: token, path: copy))
            }
            for device in devices {
                for _ in 0..<(1 + random.next(3)) {
                    let people = try device.rows("SELECT id FROM person ORDER BY id").compactMap { Int64($0) }
                    let pick = people.isEmpty ? nil : people[random.next(people.count)]
                    switch random.next(6) {
                    case 0, 1:
                        try device.sql("INSERT INTO person (first_name, last_name, city) VALUES (?, 'R', ?)",
                                       [.text("p\(random.next(1000))"), .text(cities[random.next(cities.count)])])
                    case 2:
                        if let pick { try device.sql("UPDATE person SET city = ? WHERE id = ?", [.text(cities[random.next(cities.count)]), .integer(pick)]) }
                    case 3:
                        if let pick {
                            try device.sql("INSERT INTO package (recipient_id, sender_id, created_at) VALUES (?, ?, '2026-11-24')",
                                           [.integer(pick), people.isEmpty ? .null : .integer(people[random.next(people.count)])])
                        }
                    case 4:
                        if let pick { try device.shell("DELETE FROM person WHERE id = \(pick);") }
                    default:
                        if let pick { try device.sql("UPDATE package SET sender_id = ? WHERE rowid % 2 = 0", [.integer(pick)]) }
                    }
                }
            }
            // The tool three hours ahead, in capitals, on a person the service has.
            if let gid = try devices[0].rows("SELECT gid FROM sluice_sync_id WHERE tbl = 'person' AND pulled = 0 LIMIT 1").first {
                toolLocal += 1
                _ = try await tool.push(PushRequest(device: "tool", base: try await service.head(), transactions: [
                    SyncTransaction(device: "tool", local: toolLocal, clock: HybridClock(date: Date().addingTimeInterval(3 * 3600)),
                                    changes: [SyncChange(table: "PERSON", id: gid, op: .update, values: ["CITY": .text("Tool\(round)")])]),
                ]))
            }
            for index in devices.indices.shuffled(using: &random) where random.next(3) > 0 {
                try await devices[index].client.sync()
            }
        }
        for _ in 0..<2 {
            for device in devices { try await device.client.sync() }
        }
        try await expectAlike(devices, service, "seed \(seed)")
        var ids: Set<String> = []
        for device in devices {
            ids.insert(try await device.client.deviceID)
            let pending = try await device.client.pendingChangeCount()
            let quarantined = try await device.client.quarantined()
            try expect(pending == 0 && quarantined.isEmpty, "seed \(seed): \(pending) pending, quarantined \(quarantined)")
        }
        try expect(ids.count == devices.count, "seed \(seed): two stores share a device id")
    }
}


/// A small seeded generator (a linear congruential one): the same seed, the same workload.
public struct SeededRandom: RandomNumberGenerator {
    public var state: UInt64

    public init(state: UInt64) { self.state = state }

    public mutating func next() -> UInt64 {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return state
    }

    /// A number below `bound`.
    public mutating func next(_ bound: Int) -> Int {
        Int((next() >> 33) % UInt64(bound))
    }
}

/// A live query on a device, rebuilt from its changesets only.
public final class LiveMirror: @unchecked Sendable {
    // @unchecked Sendable: used by the scenario alone (the changesets arrive through `changes`).
    private let changes: SyncConformance.Changesets<Row>
    private var array: [Row] = []
    /// How many changesets arrived.
    public private(set) var changesets = 0
    private let plain: PlainConnection
    private let sql: String

    convenience init(_ device: SyncConformance.Device, _ results: Results<Row>, sql: String) {
        self.init(store: device.store, path: device.database.path, results, sql: sql)
    }

    /// A mirror of `results` of `store` (on the file at `path`), compared with `sql`.
    public init(store: Store, path: String, _ results: Results<Row>, sql: String) {
        changes = SyncConformance.Changesets(results, of: store)
        plain = PlainConnection(path: path)
        self.sql = sql
    }

    /// Applies what arrived (each changeset must rebuild the state delivered with it),
    /// then compares with the query re-run on the plain connection.
    public func check(_ context: String) throws {
        for event in changes.take() {
            event.apply(to: &array)
            switch event {
            case .initial(let state):
                try SyncConformance.expect(array.map(\.values) == state.map(\.values), "\(sql): the initial state (\(context))")
            case .update(let state, _, _, _):
                changesets += 1
                try SyncConformance.expect(array.map(\.values) == state.map(\.values), "\(sql): a changeset does not rebuild its own state (\(context))")
            case .error(let error):
                throw ConformanceFailure("\(sql): the live query failed: \(error) (\(context))")
            }
        }
        let rerun = try plain.rows(sql)
        try SyncConformance.expect(array.map(\.values) == rerun, "\(sql) (\(context)): rebuilt \(array.map(\.values)), re-run \(rerun)")
    }
}
