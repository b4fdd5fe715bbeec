import Foundation
import SluiceDemo
import SluiceSyncClient
import SluiceTestSupport
import Store
import Testing

/// Three devices edit offline at random (inserts, updates of the same columns, deletes
/// that cascade, delete-then-reinsert of the same id, packages pointing at people created
/// elsewhere), sync in random orders, and end up with the same rows.
@Suite(.serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct ConvergenceTests {
    struct Generator {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(bound))
        }
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func devicesConvergeAfterRandomOfflineEdits(seed: UInt64) async throws {
        let space = try SyncSpace()
        let devices = try (0..<3).map { _ in try space.device() }
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
        }
        for device in devices { try await device.client.sync() }
        for device in devices { try await device.client.sync() }
        let first = try devices[0].content()
        #expect(!first.isEmpty)
        for device in devices.dropFirst() { #expect(try device.content() == first) }
        for device in devices { #expect(try await device.client.pendingChangeCount() == 0) }
    }
}

extension ConvergenceTests.Generator: RandomNumberGenerator {
    mutating func next() -> UInt64 {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return state
    }
}
