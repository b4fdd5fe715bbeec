import Foundation
import Sluice
import SluiceSyncClient
import SluiceSyncProtocol

/// Compaction on any service: a new device starts from a snapshot of the folded rows and
/// the history after it, ending equal to one that replayed everything; the history is
/// pruned up to what every active device has pulled; a device gone longer than the horizon
/// finds its history gone (410 `compacted`), starts over from a snapshot and keeps its
/// unpushed edits.
extension SyncConformance {
    /// Transactions `device` applied from pulls (its log's transactions by the sync author).
    static func pulledTransactions(_ device: Device) throws -> Int {
        try device.store.changes(since: HistoryToken(databaseID: device.store.currentToken.databaseID, sequence: 0)).count { $0.author == "sync" }
    }

    /// A history with inserts, updates, deletes and the service's own ON DELETE transactions.
    static func history(_ writer: Device) async throws {
        for index in 0..<12 {
            let person = try writer.sql("INSERT INTO person (first_name, last_name, city) VALUES (?, 'H', 'Oslo')", [.text("p\(index)")])
            try writer.sql("INSERT INTO package (recipient_id, sender_id, created_at) VALUES (?, ?, ?)", [.integer(person), .integer(person), .text("d\(index)")])
            try await writer.client.sync()
        }
        try writer.sql("UPDATE person SET city = 'Rome' WHERE first_name IN ('p1', 'p2', 'p3')")
        try writer.sql("DELETE FROM person WHERE first_name IN ('p4', 'p5')")
        try writer.sql("UPDATE package SET created_at = 'late' WHERE created_at = 'd7'")
        try await writer.client.sync()
    }

    /// What the service answers a pull from `since` with: "ok" or its status and code.
    static func pullAnswer(_ service: any ConformanceService, since: Int64) async throws -> String {
        do {
            _ = try await service.transport(token: try await service.newToken()).pull(since: since, limit: nil, device: nil)
            return "ok"
        } catch SyncClientError.rejected(let status, let body) {
            return "\(status) \(body.code)"
        }
    }

    static func aNewDeviceFromASnapshotEqualsOneThatReplayedEverything(_ service: any ConformanceService) async throws {
        let (writer, replay) = try await devices(service) { $0.startsFromSnapshot = false }
        try await history(writer)
        try await replay.client.sync()
        // The whole history gone: the next device can only start from the snapshot.
        let head = try await service.head()
        let through = try await service.compact(horizonDays: 0)
        try expect(through == head, "pruned through \(through), not the head \(head)")
        let refused = try await pullAnswer(service, since: 0)
        try expect(refused == "410 compacted", "a pull from the start: \(refused)")
        let snapshot = try Device(service, token: try await service.newToken())
        try await snapshot.client.sync()
        try await expectAlike([snapshot, replay], service, "the snapshot and the replay")
        try expect(try pulledTransactions(snapshot) == 1, "the snapshot took \(try pulledTransactions(snapshot)) local transactions, not one")

        // Both go on from the head.
        try writer.sql("UPDATE person SET age = 7 WHERE first_name = 'p0'")
        try await writer.client.sync()
        for device in [snapshot, replay] {
            try await device.client.sync()
            try expect(try device.rows("SELECT age FROM person WHERE first_name = 'p0'") == ["7"], "the edit after the snapshot did not arrive")
        }
        try snapshot.sql("UPDATE person SET age = 8 WHERE first_name = 'p1'")
        try await snapshot.client.sync()
        try await writer.client.sync()
        try expect(try writer.rows("SELECT age FROM person WHERE first_name = 'p1'") == ["8"], "the snapshot device's edit did not arrive")
        try await replay.client.sync()
        try await expectAlike([writer, snapshot, replay], service, "after going on from the head")
    }

    /// A snapshot of tables subscribed whole sends each row once: a page of packages does
    /// not send again the people it points at, which the round sent before; but a person
    /// written after the round began comes with the packages pointing at it (or in the next
    /// round), so the device drops none.
    static func aSnapshotSendsEachRowOnce(_ service: any ConformanceService) async throws {
        let a = try Device(service, token: try await service.newToken())
        try await a.store.write { db in
            for index in 0..<30 {
                try db.execute(sql: "INSERT INTO person (first_name, last_name) VALUES (?, 'Once')", arguments: [.text("p\(index)")])
                let person = db.lastInsertedRowID
                for _ in 0..<2 { try db.execute(sql: "INSERT INTO package (recipient_id, created_at) VALUES (?, '2026-12-04')", arguments: [.integer(person)]) }
            }
        }
        try await a.client.sync()
        let b = try Device(service, token: try await service.newToken()) { $0.startsFromSnapshot = true }
        b.transport.pageRows(by: 10)
        let report = try await b.client.sync()
        try expect(report.rows == 90, "a snapshot of 90 rows sent \(report.rows)")
        try await expectAlike([a, b], service, "after a snapshot in pages")
        // While C's snapshot is among the packages, A adds a person and five packages for it.
        let c = try Device(service, token: try await service.newToken()) { $0.startsFromSnapshot = true }
        c.transport.pageRows(by: 10)
        c.transport.beforeRowsPage(6) {
            try await a.store.write { db in
                try db.execute(sql: "INSERT INTO person (first_name, last_name) VALUES ('late', 'Once')")
                let person = db.lastInsertedRowID
                for _ in 0..<5 { try db.execute(sql: "INSERT INTO package (recipient_id, created_at) VALUES (?, '2026-12-04')", arguments: [.integer(person)]) }
            }
            try await a.client.sync()
        }
        try await c.client.sync()
        for device in [a, b] { try await device.client.sync() }
        try await expectAlike([a, b, c], service, "after a person came in the middle of a snapshot")
        let late = try c.rows("SELECT count(*) FROM package JOIN person ON person.id = package.recipient_id WHERE person.first_name = 'late'")
        try expect(late == ["5"], "c has \(late) of the late person's 5 packages")
    }

    /// A snapshot's pages are applied as they arrive, in one local transaction: one lost
    /// midway leaves the device as it was (nothing of the round recorded or delivered), and
    /// the next sync takes the whole snapshot, again as one local transaction.
    static func aSnapshotCutMidwayLeavesTheDeviceAsItWas(_ service: any ConformanceService) async throws {
        let (writer, _) = try await devices(service)
        try await history(writer)
        let snapshot = try Device(service, token: try await service.newToken()) { $0.startsFromSnapshot = true }
        let before = try snapshot.store.currentToken
        snapshot.transport.pageRows(by: 4)
        snapshot.transport.cutRows(after: 2)
        do {
            try await snapshot.client.sync()
            throw ConformanceFailure("a sync whose third page of rows was lost succeeded")
        } catch is SyncClientError {}
        try expect(try snapshot.rows("SELECT count(*) FROM person") == ["0"], "rows of a snapshot cut midway stayed")
        try expect(try snapshot.store.currentToken == before, "a snapshot cut midway logged a transaction")
        snapshot.transport.mend()
        try await snapshot.client.sync()
        let rounds = snapshot.transport.calls.filter { $0.hasPrefix("rows ") }.count
        try expect(rounds >= 3 + 5, "the snapshot came in \(rounds - 3) pages of 4 rows, not several")
        try expect(try pulledTransactions(snapshot) == 1, "the snapshot took \(try pulledTransactions(snapshot)) local transactions, not one")
        try await expectAlike([snapshot, writer], service, "the snapshot taken page by page and its writer")
    }

    /// A new device starts from a snapshot by default; against a service without the rows
    /// endpoint (404: older than partial sync) it replays the history instead.
    static func aNewDeviceStartsFromASnapshotOrReplaysWhereThereIsNone(_ service: any ConformanceService) async throws {
        let (writer, _) = try await devices(service)
        try await history(writer)
        let snapshot = try Device(service, token: try await service.newToken())
        try await snapshot.client.sync()
        let took = snapshot.transport.calls
        try expect(took.contains("rows since 0") && !took.contains("pull since 0"), "a new device did not start from a snapshot: \(took)")
        let replay = try Device(service, token: try await service.newToken())
        replay.transport.answerRowsNotFound()
        try await replay.client.sync()
        let replayed = replay.transport.calls
        try expect(replayed.contains("rows since 0") && replayed.contains("pull since 0"), "a device whose service has no snapshots: \(replayed)")
        try await expectAlike([writer, snapshot, replay], service, "a device from a snapshot, one replaying, and their writer")
    }

    /// A snapshot's and a subscription's rows are passed on as the service stores them (the
    /// real service: PostgreSQL's `jsonb` text, spaced and with its own number forms), not
    /// decoded and written again: the awkward values of each type the demo's columns take
    /// arrive exactly as written, by type.
    static func snapshotRowsArriveExactlyAsWritten(_ service: any ConformanceService) async throws {
        let (writer, _) = try await devices(service)
        let values: [[SQLiteValue]] = [
            [.text("Quote \" and back\\slash"), .text(""), .integer(.max), .null, .text("  spaced  ")],
            [.text("tab\tnew\nline\r\u{1}\u{1F}\u{7F}"), .text("Zoë 🚀 日本 \u{2028}"), .integer(.min), .text("a\"b\\c/d"), .text("</script>")],
            [.text("reals"), .text("0.1 + 0.2"), .real(0.1 + 0.2), .text("{\"t\": 1}"), .text("null")],
            [.text("reals"), .text("the largest"), .real(-.greatestFiniteMagnitude), .text(""), .null],
            [.text("reals"), .text("the smallest"), .real(.leastNonzeroMagnitude), .text("1e20"), .null],
            [.text("reals"), .text("beyond Int64"), .real(1e20), .null, .null],
        ]
        for row in values {
            try writer.sql("INSERT INTO person (first_name, last_name, age, email, city) VALUES (?, ?, ?, ?, ?)", row)
        }
        try await writer.client.sync()
        let snapshot = try Device(service, token: try await service.newToken()) { $0.startsFromSnapshot = true }
        try await snapshot.client.sync()
        let subset = try Device(service, token: try await service.newToken())
        try await subset.client.subscribe([SyncSubscription(table: "person")])
        let typed = "SELECT quote(first_name), quote(last_name), typeof(age), quote(age), typeof(email), quote(email), quote(city) FROM person ORDER BY last_name"
        for device in [snapshot, subset] {
            try expect(try device.rows(typed) == writer.rows(typed), "the rows as \(device === snapshot ? "a snapshot" : "a subscription") brought them: \(try device.rows(typed))")
        }
        try await expectAlike([writer, snapshot, subset], service, "a snapshot's and a subscription's values")
    }

    static func historyIsPrunedToWhatActiveDevicesHave(_ service: any ConformanceService) async throws {
        let (a, b) = try await devices(service)
        try await history(a)
        // Twice: a device's position is where its last pull started.
        for _ in 0..<2 { for device in [a, b] { try await device.client.sync() } }
        let head = try await service.head()
        let first = try await service.compact(horizonDays: 30)
        try expect(first == head, "both devices hold the head \(head): pruned through \(first)")

        // B goes quiet; A goes on. B was seen within the horizon: its history stays.
        let bAt = try await service.head()
        for index in 0..<3 {
            try a.sql("UPDATE person SET age = ? WHERE first_name = 'p0'", [.integer(Int64(index))])
            try await a.client.sync()
        }
        for _ in 0..<2 { try await a.client.sync() }
        let second = try await service.compact(horizonDays: 30)
        try expect(second == bAt, "b is at \(bAt): pruned through \(second)")
        let kept = try await pullAnswer(service, since: bAt)
        try expect(kept == "ok", "a pull from b's position: \(kept)")
        // B edits offline; then B is gone longer than the horizon (0 days): pruned past it.
        try b.sql("UPDATE person SET city = 'Tromsø' WHERE first_name = 'p1'")
        try b.sql("INSERT INTO person (first_name, last_name) VALUES ('offline', 'B')")
        let headNow = try await service.head()
        let third = try await service.compact(horizonDays: 0)
        try expect(third == headNow, "nobody active: pruned through \(third), not the head \(headNow)")
        let gone = try await pullAnswer(service, since: bAt)
        try expect(gone == "410 compacted", "a pull from b's position: \(gone)")

        // B comes back: a snapshot, its edits rebased and pushed, nothing lost.
        try await b.client.sync()
        try await a.client.sync()
        try await expectAlike([a, b], service, "after b came back")
        try expect(try a.rows("SELECT city FROM person WHERE first_name = 'p1'") == ["Tromsø"], "b's offline edit was lost")
        try expect(try a.rows("SELECT count(*) FROM person WHERE first_name = 'offline'") == ["1"], "b's offline row was lost")
        try expect(try await b.client.pendingChangeCount() == 0, "b still has edits pending")
        // A new device after pruning starts from the snapshot.
        let late = try Device(service, token: try await service.newToken())
        try await late.client.sync()
        try await expectAlike([a, late], service, "a device after pruning")
    }
}
