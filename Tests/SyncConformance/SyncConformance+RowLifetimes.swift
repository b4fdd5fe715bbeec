import Foundation
import SluiceSyncClient

/// A rowid names one row at a time: a row deleted in one transaction and a row inserted on
/// its rowid in a later one are two rows everywhere (SQLite reuses the largest rowid), and a
/// row deleted and inserted again in one transaction (`INSERT OR REPLACE`) stays one row on
/// every device, without running a device's ON DELETE actions on its unpushed rows.
extension SyncConformance {
    /// Two devices that have Ana, synced.
    static func anaOnTwoDevices(_ service: any ConformanceService) async throws -> (Device, Device) {
        let (a, b) = try await devices(service)
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ana', 'A')")
        try await a.client.sync()
        try await b.client.sync()
        return (a, b)
    }

    /// The service's people, `first_name` (as rendered: `text:Ana`) by global id.
    static func servicePeople(_ service: any ConformanceService) async throws -> [String: String] {
        SyncContent.column("first_name", of: "person", in: try await service.content())
    }

    /// Every device and the service hold the same rows.
    static func expectAlike(_ devices: [Device], _ service: any ConformanceService, _ context: String) async throws {
        let first = try devices[0].content()
        for (index, device) in devices.enumerated().dropFirst() {
            let content = try device.content()
            try expect(content == first, "\(context): device \(index) differs: only there \(Set(content).subtracting(first).sorted()), missing \(Set(first).subtracting(content).sorted())")
        }
        let stored = try await service.content()
        try expect(stored == first, "\(context): the service differs: only there \(Set(stored).subtracting(first).sorted()), missing \(Set(first).subtracting(stored).sorted())")
    }

    static func aRowOnAFreedRowidIsAnotherRow(_ service: any ConformanceService) async throws {
        let (a, b) = try await anaOnTwoDevices(service)
        let ana = try await servicePeople(service).first { $0.value == "text:Ana" }?.key
        // Deleted in one sync, a new row on the same rowid in the next: the new row has its own id.
        try a.sql("DELETE FROM person WHERE first_name = 'Ana'")
        try await a.client.sync()
        try expect(try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Bo', 'B')") == 1, "SQLite gives the largest rowid again")
        try await a.client.sync()
        let after = try await servicePeople(service)
        try expect(ana != nil && after.count == 1 && after[ana ?? ""] == nil && after.values.first == "text:Bo", "after Bo: \(after)")
        // Both in one push (a device offline): the same.
        try a.sql("DELETE FROM person WHERE first_name = 'Bo'")
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Cy', 'C')")
        try await a.client.sync()
        let third = try await servicePeople(service)
        try expect(third.count == 1 && Set(third.keys).isDisjoint(with: after.keys) && third.values.first == "text:Cy", "after Cy: \(third)")
        try await b.client.sync()
        try expect(try b.rows("SELECT first_name FROM person") == ["Cy"], "b: \(try b.rows("SELECT first_name FROM person"))")
        try await expectAlike([a, b], service, "Cy")
        // A row deleted elsewhere: b deletes Cy; a pulls that, then makes a row on the freed rowid.
        try b.sql("DELETE FROM person")
        try await b.client.sync()
        try await a.client.sync()
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Di', 'D')")
        try await a.client.sync()
        try await b.client.sync()
        let withDi = try await servicePeople(service)
        try expect(try b.rows("SELECT first_name FROM person") == ["Di"] && withDi.count == 1, "Di: \(withDi)")
        try await expectAlike([a, b], service, "Di")
    }

    static func aPushBuiltAgainNamesTheSameRows(_ service: any ConformanceService) async throws {
        let (a, _) = try await devices(service)
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ana', 'A')")
        try await a.client.sync()
        try a.sql("DELETE FROM person")
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Bo', 'B')")
        // The push is taken, its answer lost: sent again, it is recognized, not applied twice.
        a.transport.failNextPush(.afterStoring)
        do {
            try await a.client.sync()
            throw ConformanceFailure("a sync whose answer was lost returned")
        } catch is SyncClientError {}
        try await a.client.sync()
        try expect(try await a.client.pendingChangeCount() == 0, "still pending")
        let people = try await servicePeople(service)
        try expect(people.count == 1 && people.values.first == "text:Bo", "the service's people: \(people)")
        try await expectAlike([a], service, "after the retry")
    }

    static func aReplacedRowStaysOneRow(_ service: any ConformanceService) async throws {
        let (a, b) = try await anaOnTwoDevices(service)
        // B has a package not pushed yet for Ana; A replaces Ana's row (delete and insert, one transaction).
        try b.sql("INSERT INTO package (recipient_id, sender_id, created_at) VALUES (1, 1, '1')")
        try a.sql("INSERT OR REPLACE INTO person (id, first_name, last_name) VALUES (1, 'Ana', 'Again')")
        try await a.client.sync()
        try await b.client.sync()
        try expect(try b.rows("SELECT last_name FROM person") == ["Again"], "b's Ana: \(try b.rows("SELECT last_name FROM person"))")
        try expect(try b.rows("SELECT recipient_id, sender_id FROM package") == ["1|1"], "the replace took b's package with it")
        try await a.client.sync()
        try await expectAlike([a, b], service, "after the replace")
        // B replaces Ana again, pushed; A, offline, deletes Ana and makes Bo on her rowid: the
        // delete wins (as over a concurrent update), and Bo is a row of his own everywhere.
        try b.sql("DELETE FROM package")
        try b.sql("INSERT OR REPLACE INTO person (id, first_name, last_name) VALUES (1, 'Ana', 'Once more')")
        try await b.client.sync()
        try a.sql("DELETE FROM person WHERE first_name = 'Ana'")
        try expect(try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Bo', 'B')") == 1, "Bo takes rowid 1")
        try await a.client.sync()
        try await b.client.sync()
        let names = (try a.rows("SELECT first_name FROM person"), try b.rows("SELECT first_name FROM person"))
        try expect(names.0 == ["Bo"] && names.1 == ["Bo"], "a \(names.0), b \(names.1)")
        let people = try await servicePeople(service)
        try expect(people.values.sorted() == ["text:Bo"], "the service's people: \(people)")
        try await expectAlike([a, b], service, "after the delete")
    }
}
