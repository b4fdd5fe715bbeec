import Foundation
import Sluice
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport

/// The conflict inbox: every decision sync makes against a value is recorded on the device
/// that makes it (the one holding the unpushed side), with both sides, who and when, and
/// the rule; the app sees it as a live list, restores a lost value (a new write that wins
/// everywhere) or dismisses the record.
extension SyncConformance {
    static let conflictInboxScenarios: [(name: String, run: Scenario)] = [
        ("a value lost to a later edit is in the inbox of the device that decided, either order; restoring it wins everywhere", aLostValueIsInTheInboxAndRestoringItWins),
        ("an edit against a delete, both ways: the inbox keeps the lost edit, and restoring brings the row back everywhere", anEditLostToADeleteIsInTheInbox),
        ("with updateWins, the delete that lost is in the inbox, both ways; restoring it deletes the row everywhere", aDeleteLostToAnEditIsInTheInbox),
        ("a merge closure's result is in the inbox with the value it replaced", aMergeIsInTheInbox),
    ]

    /// A summary of the inbox's changesets: `initial N` or `-[deletions] +[insertions] ~[modifications]`.
    static func inboxChanges(_ changes: [CollectionChange<SyncConflict>]) -> [String] {
        changes.map { change in
            switch change {
            case .initial(let conflicts): "initial \(conflicts.count)"
            case .update(_, let deletions, let insertions, let modifications): "-\(deletions) +\(insertions) ~\(modifications)"
            case .error(let error): "error \(error)"
            }
        }
    }

    static func aLostValueIsInTheInboxAndRestoringItWins(_ service: any ConformanceService) async throws {
        let (a, b) = try await devicesSharingARow(service)
        let (ids, names) = (try await a.client.deviceID, try await b.client.deviceID)
        let inbox = Changesets(a.client.conflicts, of: a.store)
        try expect(inboxChanges(inbox.take()) == ["initial 0"], "a's inbox at first")
        // A edits first, B later and syncs first: A's edit loses when A pulls B's.
        try a.sql("UPDATE person SET city = 'Earlier'")
        try await Task.sleep(for: .milliseconds(20))
        try b.sql("UPDATE person SET city = 'Later'")
        try await b.client.sync()
        try await a.client.sync()
        let first = try SyncClient.conflicts(in: a.store)
        guard first.count == 1, let record = first.first else { throw ConformanceFailure("a's inbox after losing: \(first)") }
        try expect(record.table == "person" && record.column == "city" && record.kind == .column && record.rule == .lastWriterWins,
                   "the record names \(record)")
        try expect(record.kept.value == .text("Later") && record.kept.device == names && record.lost.value == .text("Earlier") && record.lost.device == ids,
                   "kept \(record.kept), lost \(record.lost)")
        if let kept = record.kept.clock, let lost = record.lost.clock {
            try expect(kept > lost, "the kept value's clock \(kept) is not after the lost one's \(lost)")
        } else {
            throw ConformanceFailure("a side has no clock: \(record)")
        }
        try expect(try SyncClient.conflicts(in: b.store).isEmpty, "b decided nothing: \(try SyncClient.conflicts(in: b.store))")
        try expect(inboxChanges(inbox.take()) == ["-[] +[0] ~[]"], "a's inbox when the record came")
        // The record survives a relaunch: another process reads it from the file.
        let listed = try CommandRunner().run(["sync", "conflicts", "--format", "json", "--db", a.path])
        try expect(listed.status == 0 && listed.stdout.contains(#""column":"city""#) && listed.stdout.contains(#""lost":{"value":"Earlier""#),
                   "sluice sync conflicts: \(listed)")
        // Restored: A's value is written again, wins everywhere, and the record goes.
        try await a.client.restore(record)
        try expect(inboxChanges(inbox.take()) == ["-[0] +[] ~[]"], "a's inbox after the restore")
        try await settle(a, b)
        for device in [a, b] { try expect(try device.people() == ["Ann Berg Earlier"], "after the restore: \(try device.people())") }
        try await expectAlike([a, b], service, "after the restore")
        // The other order: B edits first, A later; B syncs first: A keeps its own edit, and
        // its inbox names B's value as the one lost.
        try b.sql("UPDATE person SET city = 'B2'")
        try await Task.sleep(for: .milliseconds(20))
        try a.sql("UPDATE person SET city = 'A2'")
        try await b.client.sync()
        try await settle(a, b)
        for device in [a, b] { try expect(try device.people() == ["Ann Berg A2"], "the later edit: \(try device.people())") }
        let second = try SyncClient.conflicts(in: a.store)
        try expect(inboxChanges(inbox.take()) == ["-[] +[0] ~[]"], "a's inbox when the second record came")
        try expect(second.count == 1 && second.first?.kept.value == .text("A2") && second.first?.kept.device == ids
                   && second.first?.lost.value == .text("B2") && second.first?.lost.device == names, "a's inbox: \(second)")
        try expect(try SyncClient.conflicts(in: b.store).isEmpty, "b's inbox: \(try SyncClient.conflicts(in: b.store))")
        // Dismissed: the record goes, the values stay; a second dismiss names the id.
        guard let again = second.first else { return }
        try await a.client.dismiss(again)
        try expect(inboxChanges(inbox.take()) == ["-[0] +[] ~[]"], "a's inbox after the dismissal")
        do {
            try await a.client.dismiss(again)
            throw ConformanceFailure("a record dismissed twice")
        } catch let error as StoreError {
            try expect(error.code == .notFound && error.message.contains("\(again.id ?? 0)"), "\(error)")
        }
        try expect(try a.people() == ["Ann Berg A2"], "after the dismissal: \(try a.people())")
        // The CLI: an id the inbox does not hold is an error naming it, and changes nothing.
        let before = try a.content()
        for flag in ["--restore", "--dismiss"] {
            let unknown = try CommandRunner().run(["sync", "conflicts", flag, "\(again.id ?? 0)", "--db", a.path])
            try expect(unknown.status != 0 && unknown.stderr.contains("no conflict record \(again.id ?? 0)"), "sync conflicts \(flag) of a dismissed id: \(unknown)")
        }
        let empty = try CommandRunner().run(["sync", "conflicts", "--db", a.path])
        try expect(empty.status == 0 && empty.stdout.contains("no conflicts"), "sync conflicts: \(empty)")
        let pending = try await a.client.pendingChangeCount()
        try expect(try a.content() == before && pending == 0, "the CLI changed the store: \(pending) pending")
    }

    static func anEditLostToADeleteIsInTheInbox(_ service: any ConformanceService) async throws {
        // A edits, B deletes and syncs first: A's edit loses to the delete when A pulls. Ann
        // has a package (with a content: CASCADE, twice) and sent Bo's (SET NULL).
        let (a, b) = try await devicesSharingARow(service)
        let names = try await b.client.deviceID
        let ann = try a.rows("SELECT id FROM person WHERE first_name = 'Ann'")[0]
        let bo = try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Bo', 'B')")
        let parcel = try a.sql("INSERT INTO package (recipient_id, created_at) VALUES (\(ann), '2026-12-01')")
        try a.sql("INSERT INTO package_content (package_id, title, weight, position) VALUES (\(parcel), 'Books', 2, 0)")
        try a.sql("INSERT INTO package (recipient_id, sender_id, created_at) VALUES (\(bo), \(ann), '2026-12-02')")
        try await a.client.sync()
        try await b.client.sync()
        try a.sql("UPDATE person SET city = 'Edited' WHERE first_name = 'Ann'")
        try b.sql("DELETE FROM person WHERE first_name = 'Ann'")
        try await b.client.sync()
        try await a.client.sync()
        try expect(try !a.people().contains { $0.hasPrefix("Ann") }, "the delete won: \(try a.people())")
        try expect(try a.rows("SELECT recipient_id, sender_id IS NULL FROM package") == ["\(bo)|1"], "the ON DELETE actions ran: \(try a.rows("SELECT * FROM package"))")
        try expect(try a.rows("SELECT count(*) FROM package_content") == ["0"], "the cascade ran: \(try a.rows("SELECT * FROM package_content"))")
        let records = try SyncClient.conflicts(in: a.store)
        guard records.count == 1, let record = records.first else { throw ConformanceFailure("a's inbox: \(records)") }
        try expect(record.kind == .editLostToDelete && record.rule == .deleteWins && record.column == nil && record.kept.device == names
                   && record.row?["city"] == .text("Edited") && record.row?["first_name"] == .text("Ann"), "the record: \(record)")
        // Restored: the row comes back with its values, and with what its delete's ON DELETE
        // actions removed or cleared here, on every device.
        try await a.client.restore(record)
        try await settle(a, b)
        for device in [a, b] {
            try expect(try device.people().filter { $0.hasPrefix("Ann") } == ["Ann Berg Edited"], "after the restore: \(try device.people())")
            let packages = try device.rows("""
                SELECT r.first_name, coalesce(s.first_name, '-'), (SELECT group_concat(title) FROM package_content c WHERE c.package_id = k.id)
                FROM package k JOIN person r ON r.id = k.recipient_id LEFT JOIN person s ON s.id = k.sender_id ORDER BY k.created_at
                """)
            try expect(packages == ["Ann|-|Books", "Bo|Ann|NULL"], "the packages after the restore: \(packages)")
        }
        try await expectAlike([a, b], service, "after the restore")
        try expect(try SyncClient.conflicts(in: a.store).isEmpty, "a's inbox after the restore")
        // The other way: A deletes, B edits and syncs first: B's edit loses to A's delete,
        // decided on A (whose delete was unpushed).
        let (c, d) = try await devicesSharingARow(service, first: "Eva")
        let editor = try await d.client.deviceID
        try c.sql("DELETE FROM person WHERE first_name = 'Eva'")
        try d.sql("UPDATE person SET city = 'Theirs' WHERE first_name = 'Eva'")
        try await d.client.sync()
        try await settle(c, d)
        for device in [c, d] { try expect(try device.people().filter { $0.hasPrefix("Eva") } == [], "the delete won: \(try device.people())") }
        let theirs = try SyncClient.conflicts(in: c.store)
        try expect(theirs.count == 1 && theirs.first?.kind == .editLostToDelete && theirs.first?.lost.device == editor
                   && theirs.first?.row?["city"] == .text("Theirs"), "c's inbox: \(theirs)")
        try expect(try SyncClient.conflicts(in: d.store).isEmpty, "d's inbox: \(try SyncClient.conflicts(in: d.store))")
    }

    static func aDeleteLostToAnEditIsInTheInbox(_ service: any ConformanceService) async throws {
        // A edits, B deletes and syncs first: with updateWins the row stays on A, and A's
        // inbox names B's delete as lost. Restoring it deletes the row everywhere.
        let (a, b) = try await devicesSharingARow(service) { $0.deleteRule = .updateWins }
        let deleter = try await b.client.deviceID
        try a.sql("UPDATE person SET city = 'Kept'")
        try b.sql("DELETE FROM person")
        try await b.client.sync()
        try await a.client.sync()
        let records = try SyncClient.conflicts(in: a.store)
        guard records.count == 1, let record = records.first else { throw ConformanceFailure("a's inbox: \(records)") }
        try expect(record.kind == .deleteLostToEdit && record.rule == .updateWins && record.lost.device == deleter, "the record: \(record)")
        try await settle(a, b)
        for device in [a, b] { try expect(try device.people() == ["Ann Berg Kept"], "the edit won: \(try device.people())") }
        try await a.client.restore(record)
        try await settle(a, b)
        for device in [a, b] { try expect(try device.people() == [], "after the restore: \(try device.people())") }
        // The other way: A deletes, B edits and syncs first: the row comes back on A, whose
        // own delete is what was lost.
        let (c, d) = try await devicesSharingARow(service, first: "Eva") { $0.deleteRule = .updateWins }
        let own = try await c.client.deviceID
        try c.sql("DELETE FROM person WHERE first_name = 'Eva'")
        try d.sql("UPDATE person SET city = 'Back' WHERE first_name = 'Eva'")
        try await d.client.sync()
        try await settle(c, d)
        for device in [c, d] { try expect(try device.people().filter { $0.hasPrefix("Eva") } == ["Eva Berg Back"], "the edit won: \(try device.people())") }
        let lost = try SyncClient.conflicts(in: c.store)
        try expect(lost.count == 1 && lost.first?.kind == .deleteLostToEdit && lost.first?.lost.device == own, "c's inbox: \(lost)")
    }

    static func aMergeIsInTheInbox(_ service: any ConformanceService) async throws {
        let sum: (inout SyncConfiguration) -> Void = { configuration in
            configuration.columnPolicies["person.age"] = .merge { conflict in
                guard case .integer(let local) = conflict.local, case .integer(let remote) = conflict.remote else { return conflict.remote }
                let base: Int64 = if case .integer(let base)? = conflict.base { base } else { 0 }
                return .integer(local + remote - base)
            }
        }
        let (a, b) = try await devicesSharingARow(service, sum)
        try a.sql("UPDATE person SET age = age + 1")
        try b.sql("UPDATE person SET age = age + 10")
        try await b.client.sync()
        try await settle(a, b)
        for device in [a, b] { try expect(try device.rows("SELECT age FROM person") == ["41"], "merged: \(try device.rows("SELECT age FROM person"))") }
        let records = try SyncClient.conflicts(in: a.store)
        try expect(records.count == 1 && records.first?.kind == .merge && records.first?.rule == .merge && records.first?.column == "age"
                   && records.first?.kept.value == .integer(41) && records.first?.lost.value == .integer(31), "a's inbox: \(records)")
    }
}
