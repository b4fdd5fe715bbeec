import Foundation
import Sluice
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol

/// What pulled rows do to a device's live queries, on any service: rows entering and
/// leaving a subset device's subscriptions arrive and go as ordinary changesets; pulled
/// rows reach the device's own full-text index through its triggers, which nothing logs,
/// pushes or stores.
extension SyncConformance {
    /// The packages a live query shows, by creation date.
    static func dates(_ change: CollectionChange<Row>) -> [String] {
        switch change {
        case .initial(let packages), .update(let packages, _, _, _): packages.map { "\($0["created_at"] ?? .null)" }
        case .error: []
        }
    }

    /// The one changeset `changesets` took since the last call, as `dates deletions insertions modifications`.
    static func one(_ changesets: Changesets<Row>, _ context: String) throws -> String {
        let taken = changesets.take()
        guard taken.count == 1, case .update(_, let deletions, let insertions, let modifications) = taken[0] else {
            throw ConformanceFailure("\(context): the live query saw \(taken), not one changeset")
        }
        return "\(dates(taken[0])) -\(deletions) +\(insertions) ~\(modifications)"
    }

    static func rowsEnterAndLeaveAsChangesets(_ service: any ConformanceService) async throws {
        let full = try Device(service, token: try await service.newToken())
        let subset = try Device(service, token: try await service.newToken()) { $0.subscriptions = [oslo] }
        let ana = try full.sql("INSERT INTO person (first_name, last_name, city) VALUES ('Ana', 'A', 'Oslo')")
        let bo = try full.sql("INSERT INTO person (first_name, last_name, city) VALUES ('Bo', 'B', 'Bergen')")
        let first = try full.sql("INSERT INTO package (recipient_id, sender_id, created_at) VALUES (?, ?, '1')", [.integer(ana), .integer(bo)])
        try full.sql("INSERT INTO package (recipient_id, created_at) VALUES (?, '2')", [.integer(bo)])
        try full.sql("INSERT INTO package_content (package_id, title, weight, position) VALUES (?, 'tea', 5, 0)", [.integer(first)])
        try await full.client.sync()

        let changesets = Changesets(subset.store.rows(in: "package").sorted(by: [Ordering("created_at")]), of: subset.store)
        _ = changesets.take()
        func people() throws -> [String] { try subset.rows("SELECT first_name FROM person ORDER BY first_name") }
        func round(_ edit: () throws -> Void) async throws {
            try edit()
            try await full.client.sync()
            try await subset.client.sync()
        }

        // Ana's package, with Ana and its sender Bo (the rows it points at); not Bo's package, no contents.
        try await subset.client.sync()
        try expect(try one(changesets, "the first round") == "[\"1\"] -[] +[0] ~[]", "the first round")
        try expect(try people() == ["Ana", "Bo"] && (try subset.rows("SELECT count(*) FROM package_content")) == ["0"], "the first round holds \(try people())")

        // Bo moves to Oslo: his package enters, though the package itself did not change.
        try await round { try full.sql("UPDATE person SET city = 'Oslo' WHERE id = ?", [.integer(bo)]) }
        let entered = try one(changesets, "Bo moved to Oslo")
        try expect(entered == "[\"1\", \"2\"] -[] +[1] ~[]", "Bo moved to Oslo: \(entered)")

        // Ana moves away: her package leaves, and Ana with it (nothing here points at her).
        try await round { try full.sql("UPDATE person SET city = 'Rome' WHERE id = ?", [.integer(ana)]) }
        let left = try one(changesets, "Ana moved away")
        try expect(left == "[\"2\"] -[0] +[] ~[]" && (try people()) == ["Bo"], "Ana moved away: \(left), people \(try people())")
        // Removed here only: the service and the other device keep Ana and her package.
        try expect(try full.rows("SELECT count(*) FROM package") == ["2"], "the full device lost a package")
        let stored = SyncContent.column("first_name", of: "person", in: try await service.content())
        try expect(stored.count == 2, "the service holds people \(stored)")
        try expect(try await subset.client.pendingChangeCount() == 0, "leaving rows are pending edits")

        // A change to a kept row is a modification; the subset device's own edit reaches everyone.
        try await round { try full.sql("UPDATE package SET created_at = '3' WHERE created_at = '2'") }
        let modified = try one(changesets, "a kept row changed")
        try expect(modified == "[\"3\"] -[] +[] ~[0]", "a kept row changed: \(modified)")
        try subset.sql("UPDATE package SET created_at = '4'")
        _ = changesets.take()
        try await subset.client.sync()
        try await full.client.sync()
        try expect(try full.rows("SELECT created_at FROM package ORDER BY created_at") == ["1", "4"], "the subset device's edit")

        // Deleted on the service: gone here too.
        try await round { try full.sql("DELETE FROM person WHERE id = ?", [.integer(bo)]) }
        let gone = changesets.take()
        try expect(gone.last.map(dates) == [] && (try people()) == [], "Bo deleted: \(gone), people \(try people())")
        let held = try subset.content()
        let wanted = expected(try await service.content(), [oslo])
        try expect(held == wanted, "the subset device: \(difference(held, wanted))")
    }

    /// The full-text index is each device's own: pulled rows reach it through its triggers
    /// (a live search follows them), and neither the index nor its shadow tables are
    /// logged, pushed or stored by the service.
    static func eachDeviceBuildsItsOwnFullTextIndex(_ service: any ConformanceService) async throws {
        let (a, b) = try await devices(service)
        let changesets = Changesets(b.store.objects(Person.self).searching("zoe"), of: b.store)
        _ = changesets.take()
        try a.sql("INSERT INTO person (first_name, last_name, city) VALUES ('Zoë', 'Ødegaard', 'Oslo'), ('Ana', 'Kim', 'Bergen')")
        try await a.client.sync()
        try await b.client.sync()
        let found = changesets.take()
        guard found.count == 1, case .update(let people, _, let insertions, _) = found[0], people.map(\.firstName) == ["Zoë"], insertions == [0] else {
            throw ConformanceFailure("b's search saw \(found), not Zoë arriving")
        }
        // An edit on A moves the row out of B's search.
        try a.sql("UPDATE person SET first_name = 'Zora' WHERE first_name = 'Zoë'")
        try await a.client.sync()
        try await b.client.sync()
        let moved = changesets.take()
        guard moved.count == 1, case .update(let left, let deletions, _, _) = moved[0], left.isEmpty, deletions == [0] else {
            throw ConformanceFailure("b's search saw \(moved), not Zoë leaving")
        }
        try expect(try b.rows("SELECT rowid FROM sluice_fts_person WHERE sluice_fts_person MATCH 'zora'").count == 1, "b's index does not find Zora")
        for device in [a, b] {
            try expect(try device.rows("SELECT count(*) FROM sluice_change WHERE tbl LIKE 'sluice%'") == ["0"], "the index's tables are logged")
        }
        let stored = try await service.content().filter { $0.hasPrefix("sluice") }
        try expect(stored.isEmpty, "the service stores the index: \(stored)")
    }
}
