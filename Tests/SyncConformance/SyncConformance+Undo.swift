import Foundation
import Sluice
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport

/// Undo that crosses devices: a device reverts (and redoes) a transaction another device
/// wrote, or its own after it synced, across a relaunch; the revert syncs as an ordinary
/// transaction. A revert whose rows changed since names them, and reverts the rest only
/// when asked.
extension SyncConformance {
    static let undoScenarios: [(name: String, run: Scenario)] = [
        ("a third device undoes what another device did, and redoes it, after a relaunch; a device undoes its own synced edit", undoCrossesDevices),
        ("a revert whose rows changed since names them, and reverts the rest only when asked, everywhere", aRevertOfChangedRowsNamesThem),
    ]

    static func undoCrossesDevices(_ service: any ConformanceService) async throws {
        let token = try await service.newToken()
        let laptop = try Device(service, token: token)
        let phone = try Device(service, token: token)
        let tablet = try Device(service, token: token)
        try laptop.sql("INSERT INTO person (first_name, last_name, city, age) VALUES ('Ann', 'Berg', 'Oslo', 30)")
        try await laptop.client.sync()
        // (A new device starts from a snapshot, which names no writer: the edit comes after.)
        for device in [phone, tablet] { try await device.client.sync() }
        try laptop.sql("UPDATE person SET city = 'Bergen'")
        try await laptop.client.sync()
        for device in [phone, tablet] { try await device.client.sync() }
        try expect(try tablet.people() == ["Ann Berg Bergen"], "the tablet: \(try tablet.people())")
        // The tablet undoes what the laptop just did: found by the laptop's id, after a relaunch.
        let laptopID = try await laptop.client.deviceID
        let relaunched = try Device(service, token: token, path: tablet.path)
        guard let edit = try await relaunched.client.lastTransaction(by: laptopID) else {
            throw ConformanceFailure("the tablet's history names nothing by the laptop: \(try await relaunched.client.history())")
        }
        try expect(!edit.isLocal && edit.seq != nil && edit.transaction.changes.map(\.table) == ["person"]
                   && edit.transaction.changes.first?.new?["city"] == .text("Bergen"), "the laptop's last transaction: \(edit)")
        let undone = try await relaunched.client.revert(edit)
        try expect(undone.skipped.isEmpty && undone.transaction?.author == SyncClient.revertAuthor, "the revert: \(undone)")
        try await relaunched.client.sync()
        for device in [laptop, phone] { try await device.client.sync() }
        for device in [laptop, phone, relaunched] { try expect(try device.people() == ["Ann Berg Oslo"], "after the undo: \(try device.people())") }
        // Redo: the revert reverted, on the same device.
        guard let revert = try await relaunched.client.history().last, revert.isLocal, revert.transaction.author == SyncClient.revertAuthor else {
            throw ConformanceFailure("the tablet's last transaction is not its revert: \(try await relaunched.client.history().last.map { "\($0)" } ?? "none")")
        }
        try await relaunched.client.revert(revert)
        try await relaunched.client.sync()
        for device in [laptop, phone] { try await device.client.sync() }
        for device in [laptop, phone, relaunched] { try expect(try device.people() == ["Ann Berg Bergen"], "after the redo: \(try device.people())") }
        // The phone undoes its own edit after it synced.
        try phone.sql("UPDATE person SET age = 41")
        try await phone.client.sync()
        guard let own = try await phone.client.history().last(where: \.isLocal), own.transaction.changes.first?.new?["age"] == .integer(41) else {
            throw ConformanceFailure("the phone's own edit is not in its history")
        }
        try await phone.client.revert(own)
        try await phone.client.sync()
        for device in [laptop, relaunched] { try await device.client.sync() }
        for device in [laptop, phone, relaunched] { try expect(try device.rows("SELECT age FROM person") == ["30"], "after the phone's undo: \(try device.rows("SELECT age FROM person"))") }
        try await expectAlike([laptop, phone, relaunched], service, "after the undos")
    }

    static func aRevertOfChangedRowsNamesThem(_ service: any ConformanceService) async throws {
        let (a, b) = try await devices(service)
        try a.sql("INSERT INTO person (first_name, last_name, city) VALUES ('Pia', 'P', 'Oslo'), ('Quinn', 'Q', 'Oslo')")
        try await a.client.sync()
        try await b.client.sync()
        guard let inserted = try await a.client.history().last(where: \.isLocal) else { throw ConformanceFailure("a's insert is not in its history") }
        try b.sql("UPDATE person SET city = 'Riga' WHERE first_name = 'Pia'")
        try await b.client.sync()
        try await a.client.sync()
        // Whole, it is refused, naming Pia's row; nothing is written.
        let before = try a.content()
        do {
            try await a.client.revert(inserted)
            throw ConformanceFailure("a revert of a changed row went through")
        } catch let error as StoreError {
            try expect(error.code == .conflict && error.message.contains("person") && error.message.contains("it was deleted later") == false
                       && error.message.contains("city"), "\(error)")
        }
        try expect(try a.content() == before, "the refused revert wrote something")
        let conflicts = try a.client.revertConflicts(of: inserted)
        let pia = try a.rows("SELECT id FROM person WHERE first_name = 'Pia'")
        try expect(conflicts.count == 1 && conflicts.first.map { "\($0.key)" } == pia.first && conflicts.first?.column == nil, "the conflicts: \(conflicts)")
        // Asked to, it reverts the rest: Quinn goes everywhere, Pia stays with B's edit.
        let outcome = try await a.client.revert(inserted, skippingChanged: true)
        try expect(outcome.skipped == conflicts && outcome.transaction?.changes.count == 1, "the partial revert: \(outcome)")
        try await a.client.sync()
        try await b.client.sync()
        for device in [a, b] { try expect(try device.people() == ["Pia P Riga"], "after the partial revert: \(try device.people())") }
        try await expectAlike([a, b], service, "after the partial revert")
    }
}
