import Foundation
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// Three devices edit offline at random (inserts, updates of the same columns, deletes
/// that cascade, delete-then-reinsert of the same id, packages pointing at people created
/// elsewhere), sync in random orders, and end up with the same rows as each other and the
/// service. On every device two live queries (people by name; packages for Oslo, through
/// the recipient relationship) are rebuilt from their changesets only: after every
/// changeset the rebuilt array equals the state delivered with it, and whenever the device
/// is quiet it equals the query re-run on an independent plain SQLite connection.
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct ConvergenceTests {
    struct Generator {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(bound))
        }
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func devicesConvergeAfterRandomOfflineEdits(seed: UInt64) async throws {
        try await randomOfflineEdits(seed: seed, snapshots: false)
    }

    /// The same, each device starting from a snapshot of the rows (seed 11 found a row pulled
    /// onto the rowid of a row made here after this device deleted the pulled one).
    @Test(arguments: [9, 10, 11, 12] as [UInt64])
    func devicesStartingFromSnapshotsConverge(seed: UInt64) async throws {
        try await randomOfflineEdits(seed: seed, snapshots: true)
    }

    private func randomOfflineEdits(seed: UInt64, snapshots: Bool) async throws {
        let space = try SyncSpace()
        let devices = try (0..<3).map { _ in try space.device { $0.startsFromSnapshot = snapshots } }
        let mirrors = try devices.map { device in
            [
                LiveMirror(device, device.store.rows(in: "person").sorted(by: [Ordering("last_name"), Ordering("id")]),
                           sql: "SELECT * FROM person ORDER BY last_name, id"),
                LiveMirror(device, try device.store.rows(in: "package").filter("recipient.city == 'Oslo'").sorted(by: [Ordering("id")]),
                           sql: "SELECT package.* FROM package JOIN person ON person.id = package.recipient_id WHERE person.city = 'Oslo' ORDER BY package.id"),
            ]
        }
        func checkMirrors(_ context: String) throws {
            for mirror in mirrors.joined() { try mirror.check(context) }
        }
        try checkMirrors("initial")
        var random = Generator(state: seed)
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
            try checkMirrors("after round")
        }
        for device in devices { try await device.client.sync() }
        for device in devices { try await device.client.sync() }
        try checkMirrors("synced")
        let first = try devices[0].content()
        #expect(!first.isEmpty)
        for device in devices.dropFirst() {
            let content = try device.content()
            #expect(content == first, "only on device 0: \(Set(first).subtracting(content).sorted()); only on this one: \(Set(content).subtracting(first).sorted())")
        }
        let service = try SyncContent.ofService(space.postgres)
        if ProcessInfo.processInfo.environment["SLUICE_SYNC_DEBUG"] != nil, try service != first || devices.contains(where: { try $0.content() != first }) {
            for (index, device) in devices.enumerated() {
                print("=== device \(index) \(try await device.client.deviceID)")
                for transaction in try device.store.changes(since: HistoryToken(databaseID: device.store.currentToken.databaseID, sequence: 0)) {
                    let lines = transaction.changes.filter { ["package", "person"].contains($0.table) }.map { change in
                        "\(change.operation) \(change.table) \(change.rowID) \(change.new.map { zip($0.columns, $0.values).map { "\($0)=\($1)" }.joined(separator: ",") } ?? "")"
                    }
                    print("  \(transaction.token.sequence) \(transaction.author ?? "-"): \(lines.joined(separator: " | "))")
                }
                print(try device.rows("SELECT tbl, local, gid FROM sluice_sync_id").joined(separator: "\n"))
            }
        }
        #expect(service == first, "only on the service: \(Set(service).subtracting(first).sorted()); only on devices: \(Set(first).subtracting(service).sorted())")
        for device in devices { #expect(try await device.client.pendingChangeCount() == 0) }
        #expect(mirrors.allSatisfy { $0[0].changesets > 0 })
    }
}

extension ConvergenceTests {
    /// The same property through what breaks sync: a store file copied mid-run (a new device
    /// starts from the copy), people deleted by the `sqlite3` shell (foreign keys off: the
    /// service applies the ON DELETE actions), a tool whose clock runs three hours ahead and
    /// spells columns in capitals, and concurrent edits of the same rows.
    @Test(arguments: [11, 12, 13, 14] as [UInt64])
    func devicesConvergeThroughCopiesShellDeletesAndSkewedClocks(seed: UInt64) async throws {
        let space = try SyncSpace()
        let folder = TemporaryDatabase()
        var devices = try (0..<3).map { try Device(path: folder.url("d\($0).sqlite").path, server: space.service.url, token: space.token) }
        var random = Generator(state: seed)
        let cities = ["Oslo", "Bergen", "Riga"]
        var toolLocal: Int64 = 0
        for round in 0..<6 {
            if round == 2 {
                // A copy of device 0's file, as a backup restored on a new phone.
                let copy = folder.url("copy.sqlite").path
                try SQLiteShell.run(path: devices[0].store.path, "VACUUM INTO '\(copy)';")
                devices.append(try Device(path: copy, server: space.service.url, token: space.token))
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
                        if let pick { try SQLiteShell.run(path: device.store.path, "DELETE FROM person WHERE id = \(pick);") }
                    default:
                        if let pick { try device.sql("UPDATE package SET sender_id = ? WHERE rowid % 2 = 0", [.integer(pick)]) }
                    }
                }
            }
            // The tool three hours ahead, in capitals, on a person the service has.
            if let gid = try devices[0].rows("SELECT gid FROM sluice_sync_id WHERE tbl = 'person' AND pulled = 0 LIMIT 1").first {
                toolLocal += 1
                let head = try space.head()
                _ = try await SyncRequests.push(PushRequest(device: "tool", base: head, transactions: [
                    SyncTransaction(device: "tool", local: toolLocal, clock: HybridClock(date: Date().addingTimeInterval(3 * 3600)),
                                    changes: [SyncChange(table: "PERSON", id: gid, op: .update, values: ["CITY": .text("Tool\(round)")])]),
                ]), to: space, token: space.token)
            }
            for index in devices.indices.shuffled(using: &random) where random.next(3) > 0 {
                try await devices[index].client.sync()
            }
        }
        for _ in 0..<2 {
            for device in devices { try await device.client.sync() }
        }
        try await SyncFaultTests.converge(devices, postgres: space.postgres)
        let ids = try await devices.asyncMap { try await $0.client.deviceID }
        #expect(Set(ids).count == devices.count, "two stores share a device id: \(ids)")
        for device in devices { #expect(try await device.client.quarantined().isEmpty) }
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}

/// A live query on a device, rebuilt from its changesets only.
final class LiveMirror: @unchecked Sendable {
    // @unchecked Sendable: `events` is guarded by `lock`; the rest is used by the test alone.
    private let lock = NSLock()
    private var events: [CollectionChange<Row>] = []
    private var array: [Row] = []
    private(set) var changesets = 0
    private var token: ObservationToken?
    private let store: Store
    private let plain: PlainConnection
    private let sql: String
    private let queue = DispatchQueue(label: "mirror")

    init(_ device: Device, _ results: Results<Row>, sql: String) {
        store = device.store
        plain = PlainConnection(path: device.database.path)
        self.sql = sql
        token = results.observe(on: queue) { [weak self] change in
            guard let self else { return }
            self.lock.withLock { self.events.append(change) }
        }
    }

    deinit { token?.invalidate() }

    /// Applies what arrived (each changeset must rebuild the state delivered with it),
    /// then compares with the query re-run on the plain connection.
    func check(_ context: String) throws {
        store.waitForObservers()
        // Deliveries to the mirror's own queue are asynchronous: wait for those under way.
        queue.sync {}
        for event in lock.withLock({ defer { events = [] }; return events }) {
            event.apply(to: &array)
            switch event {
            case .initial(let state):
                #expect(array.map(\.values) == state.map(\.values), "initial (\(context))")
            case .update(let state, _, _, _):
                changesets += 1
                #expect(array.map(\.values) == state.map(\.values), "a changeset does not rebuild its own state (\(context))")
            case .error(let error):
                Issue.record("live query failed: \(error) (\(context))")
            }
        }
        #expect(array.map(\.values) == (try plain.rows(sql)), "\(sql) (\(context))")
    }
}

extension ConvergenceTests.Generator: RandomNumberGenerator {
    mutating func next() -> UInt64 {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return state
    }
}
