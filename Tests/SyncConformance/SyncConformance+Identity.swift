import Foundation
import Sluice
import SluiceSyncClient
import SluiceTestSupport

/// Device identity on any service: a store file copied (a backup restored, an app moved to
/// a new phone) and a store that claims another device's id each become a device of their
/// own, and every edit of every copy reaches every device and the service. (A push under a
/// device id another token registered: ``identityConflictTakesANewID(_:)`` and
/// ``rawPushRules(_:)``.)
extension SyncConformance {
    /// Copies a closed store's files (the database and, if any, its WAL).
    static func copyStore(_ source: String, to destination: String) throws {
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: source + suffix) {
            try FileManager.default.copyItem(atPath: source + suffix, toPath: destination + suffix)
        }
    }

    /// The people every copy must end with.
    static func everyone(_ device: Device) throws -> [String] {
        try device.rows("SELECT first_name, last_name, coalesce(city, '-'), coalesce(age, -1) FROM person ORDER BY first_name, last_name")
    }

    static func aCopiedStoreFileKeepsTheEditsOfBothCopies(_ service: any ConformanceService) async throws {
        let token = try await service.newToken()
        let folder = TemporaryDatabase()
        let original = folder.url("original.sqlite").path
        let copy = folder.url("copy.sqlite").path
        let firstID: String
        do {
            let device = try Device(service, token: token, path: original)
            try device.sql("INSERT INTO person (first_name, last_name) VALUES ('Ada', 'Before')")
            try await device.client.sync()
            firstID = try await device.client.deviceID
        }
        try copyStore(original, to: copy)
        let a = try Device(service, token: token, path: original)
        let c = try Device(service, token: token, path: copy)
        let ids = (try await a.client.deviceID, try await c.client.deviceID)
        try expect(ids.0 == firstID && ids.1 != firstID, "the original's id \(ids.0), the copy's \(ids.1), first \(firstID)")
        // Each copy edits on its own: a new row each, and a column each of the shared row.
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ann', 'Original')")
        try a.sql("UPDATE person SET city = 'Oslo' WHERE first_name = 'Ada'")
        try c.sql("INSERT INTO person (first_name, last_name) VALUES ('Cid', 'Copy')")
        try c.sql("UPDATE person SET age = 7 WHERE first_name = 'Ada'")
        for device in [a, c, a] { try await device.client.sync() }
        let fresh = try Device(service, token: try await service.newToken())
        try await fresh.client.sync()
        let expected = ["Ada|Before|Oslo|7", "Ann|Original|-|-1", "Cid|Copy|-|-1"]
        for (name, device) in [("the original", a), ("the copy", c), ("a fresh device", fresh)] {
            try expect(try everyone(device) == expected, "\(name) holds \(try everyone(device))")
        }
        try await expectAlike([a, c, fresh], service, "after the copies synced")
    }

    /// The per-file identity cannot see this one (B's own file, A's id written into it, as
    /// a store restored on a system where the file identity is not available would be):
    /// the service's history of the id and the device's own record of what it sent do.
    static func aStoreClaimingAnotherDevicesIDIsReidentified(_ service: any ConformanceService) async throws {
        let (a, b) = try await devices(service)
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ada', 'A')")
        try await a.client.sync()
        try b.sql("INSERT INTO person (first_name, last_name) VALUES ('Bo', 'B')")
        try await b.client.sync()
        let stolen = try await a.client.deviceID
        try await b.store.write { db in try db.execute(sql: "UPDATE sluice_sync_state SET value = ? WHERE key = 'device'", arguments: [.text(stolen)]) }
        let claimant = try Device(service, token: try await service.newToken(), path: b.path)
        try expect(try await claimant.client.deviceID == stolen, "the claimant does not claim A's id")
        for round in 0..<3 {
            try a.sql("INSERT INTO person (first_name, last_name) VALUES (?, 'A')", [.text("a\(round)")])
            try claimant.sql("INSERT INTO person (first_name, last_name) VALUES (?, 'B')", [.text("b\(round)")])
            try await a.client.sync()
            try await claimant.client.sync()
        }
        try await a.client.sync()
        try expect(try await claimant.client.deviceID != stolen, "the claimant kept A's id")
        let expected = ["Ada|A|-|-1", "Bo|B|-|-1", "a0|A|-|-1", "a1|A|-|-1", "a2|A|-|-1", "b0|B|-|-1", "b1|B|-|-1", "b2|B|-|-1"]
        for (name, device) in [("a", a), ("the claimant", claimant)] {
            try expect(try everyone(device) == expected, "\(name) holds \(try everyone(device))")
        }
        try await expectAlike([a, claimant], service, "after the claimant was reidentified")
    }
}
