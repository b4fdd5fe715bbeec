import Foundation
import SluiceSyncConformance
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// Devices converging through what breaks sync, against the real service. (Random offline
/// edits from empty devices and from snapshots, with live lists rebuilt from changesets, are
/// SyncConformance's scenarios: they run against this service and the one in memory.)
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct ConvergenceTests {
    /// The convergence property through what breaks sync: a store file copied mid-run (a new device
    /// starts from the copy), people deleted by the `sqlite3` shell (foreign keys off: the
    /// service applies the ON DELETE actions), a tool whose clock runs three hours ahead and
    /// spells columns in capitals, and concurrent edits of the same rows.
    @Test(arguments: [11, 12, 13, 14] as [UInt64])
    func devicesConvergeThroughCopiesShellDeletesAndSkewedClocks(seed: UInt64) async throws {
        let space = try SyncSpace()
        let folder = TemporaryDatabase()
        var devices = try (0..<3).map { try Device(path: folder.url("d\($0).sqlite").path, server: space.service.url, token: space.token) }
        var random = SeededRandom(state: seed)
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
