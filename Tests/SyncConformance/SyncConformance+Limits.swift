import Foundation
import Sluice
import SluiceSyncClient
import SluiceSyncProtocol

/// The service's limits on one push (``Setup/limits(pushTransactions:bodyBytes:)``): a long
/// offline queue goes in batches the service accepts, halving after each refusal; a
/// store's first upload goes in parts of rows and resumes after the last part the service
/// took; one transaction or row over the body limit cannot be split, and its error stands
/// with nothing lost.
extension SyncConformance {
    static let limitScenarios: [(name: String, setup: Setup, run: Scenario)] = [
        ("a long offline queue is pushed in batches the service accepts; one transaction over the limit stands refused, nothing lost",
         .limits(pushTransactions: 4, bodyBytes: 6_000), aLongOfflineQueueIsPushedInBatches),
        ("a store's first upload goes in parts and resumes after the last part the service took",
         .limits(pushTransactions: 10_000, bodyBytes: 9_000), aFirstUploadGoesInParts),
        ("a first upload sends each part before the one ahead is answered: one that overtakes is sent again, a lost answer loses nothing",
         .demo, aFirstUploadSendsItsPartsAhead),
    ]

    /// Whether `error` is the service's `too_large` refusal.
    static func isTooLarge(_ error: any Error) -> Bool {
        if case SyncClientError.rejected(status: 413, let body) = error { return body.code == .tooLarge }
        return false
    }

    static func aLongOfflineQueueIsPushedInBatches(_ service: any ConformanceService) async throws {
        // The service takes at most 4 transactions per push and 6,000 bytes per body.
        let a = try Device(service, token: try await service.newToken())
        let b = try Device(service, token: try await service.newToken()) { $0.pushBatchSize = 3 }
        // Both have synced once (a first sync uploads the rows a store holds, in one
        // transaction, not its history); then 23 transactions on A while offline: inserts,
        // updates, a delete and packages pointing at people made in earlier transactions.
        try await a.client.sync()
        try await b.client.sync()
        var people: [Int64] = []
        for index in 0..<12 {
            people.append(try a.sql("INSERT INTO person (first_name, last_name, city) VALUES (?, 'Queue', 'Oslo')", [.text("p\(index)")]))
        }
        for index in 0..<5 { try a.sql("UPDATE person SET age = ? WHERE id = ?", [.integer(Int64(20 + index)), .integer(people[index])]) }
        try a.sql("DELETE FROM person WHERE id = ?", [.integer(people[11])])
        for index in 0..<5 { try a.sql("INSERT INTO package (recipient_id, created_at) VALUES (?, '2026-11-23')", [.integer(people[index])]) }
        let queued = try await a.client.pendingChangeCount()
        try expect(queued == 23, "a has \(queued) transactions pending, not 23")
        // A sends 1,000 at a time by default: refused (413), it halves until the service takes them.
        let pushedByA = try await a.client.sync()
        let left = try await a.client.pendingChangeCount()
        try expect(pushedByA.pushed == 23 && left == 0, "a pushed \(pushedByA.pushed) of 23, \(left) left")
        // B's batches of 3 fit at once; its 7 transactions follow A's.
        for index in 0..<7 { try b.sql("INSERT INTO person (first_name, last_name) VALUES (?, 'B')", [.text("b\(index)")]) }
        let pushedByB = try await b.client.sync()
        try expect(pushedByB.pushed == 7 && pushedByB.pulled == 23, "b pushed \(pushedByB.pushed) and pulled \(pushedByB.pulled)")
        try await a.client.sync()
        try await expectAlike([a, b], service, "after the batches")
        try expect(try a.rows("SELECT count(*) FROM person") == ["18"], "a has \(try a.rows("SELECT count(*) FROM person")) people")
        let packages = try b.rows("SELECT count(*) FROM package k JOIN person p ON p.id = k.recipient_id WHERE p.last_name = 'Queue'")
        try expect(packages == ["5"], "b has \(packages) packages of the queue's people")
        // One transaction over the body limit cannot be split: its error stands, nothing is lost.
        try a.sql("INSERT INTO person (first_name, last_name) VALUES (?, 'Big')", [.text(String(repeating: "x", count: 10_000))])
        do {
            try await a.client.sync()
            throw ConformanceFailure("a transaction over the body limit was taken")
        } catch where isTooLarge(error) {}
        try expect(try await a.client.pendingChangeCount() == 1, "the refused transaction is not pending")
        let stored = try await service.content()
        try expect(stored == (try b.content()), "the service took part of the refused transaction")
    }

    static func aFirstUploadGoesInParts(_ service: any ConformanceService) async throws {
        let a = try Device(service, token: try await service.newToken()) { $0.uploadBatchRows = 20 }
        // 95 people and 30 packages before the first sync; the 50th person is too large for a push.
        let people = try await a.store.write { db in
            var people: [Int64] = []
            for index in 0..<95 {
                try db.execute(sql: "INSERT INTO person (first_name, last_name, city) VALUES (?, 'Upload', ?)",
                               arguments: [.text(index == 49 ? String(repeating: "x", count: 12_000) : "u\(index)"), .text(index % 2 == 0 ? "Oslo" : "Riga")])
                people.append(db.lastInsertedRowID)
            }
            for index in 0..<30 {
                try db.execute(sql: "INSERT INTO package (recipient_id, created_at) VALUES (?, '2026-11-23')", arguments: [.integer(people[index * 3])])
            }
            return people
        }
        // Parts of 20 rows; the part holding the large row is refused (413) and halved down
        // to that row alone, whose error stands. The 49 people before it are on the service.
        do {
            try await a.client.sync()
            throw ConformanceFailure("a row over the body limit was taken")
        } catch where isTooLarge(error) {}
        let taken = try await service.content().count
        try expect(taken == 49, "the service took \(taken) rows before the large one, not 49")
        // The row shrinks; the service takes the next part but its answer is lost, and before
        // the retry a row of that part is deleted, so the part would now end one row later.
        try a.sql("UPDATE person SET first_name = 'u49' WHERE id = ?", [.integer(people[49])])
        a.transport.failNextPush(.afterStoring)
        do {
            try await a.client.sync()
            throw ConformanceFailure("a sync whose answer was lost succeeded")
        } catch is SyncClientError {}
        try a.sql("DELETE FROM person WHERE id = ?", [.integer(people[55])])
        try await a.client.sync()
        try expect(try await a.client.pendingChangeCount() == 0, "still pending after the upload")
        let b = try Device(service, token: try await service.newToken())
        try await b.client.sync()
        try await expectAlike([a, b], service, "after the upload in parts")
        try expect(try b.rows("SELECT count(*), sum(first_name = 'u49') FROM person") == ["94|1"], "b's people: \(try b.rows("SELECT count(*), sum(first_name = 'u49') FROM person"))")
        try expect(try b.rows("SELECT count(*) FROM package JOIN person ON person.id = package.recipient_id") == ["30"], "b's packages")
    }

    static func aFirstUploadSendsItsPartsAhead(_ service: any ConformanceService) async throws {
        func part(_ number: Int64) -> Int64 { number - (1 << 40) }
        func people(_ device: Device, _ count: Int, _ name: String) throws {
            try device.store.write { db in
                for index in 0..<count {
                    try db.execute(sql: "INSERT INTO person (first_name, last_name) VALUES (?, ?)", arguments: [.text("\(name)\(index)"), .text(name)])
                }
            }
        }
        // 80 people in parts of 10. Part 3 is sent while part 2 is on its way, and reaches
        // the service first (part 2 is held until part 3 is answered): refused as out of
        // order, it goes again once part 2 is taken. Each part is stored once, in order.
        let a = try Device(service, token: try await service.newToken()) { $0.uploadBatchRows = 10 }
        try people(a, 80, "a")
        let start = try await service.head()
        a.transport.holdPush(of: part(2), until: part(3))
        let report = try await a.client.sync()
        let sent = a.transport.calls.filter { $0.hasPrefix("push") }
        try expect(sent.filter { $0.hasSuffix("locals [\(part(3))]") }.count >= 2, "part 3 was not sent again after it overtook part 2: \(sent)")
        let afterA = try await service.head() - start
        try expect(!report.reidentified && afterA == 8, "the service holds \(afterA) transactions, not 8 parts")
        // B's upload: the service takes part 2 and its answer is lost, and part 3, sent
        // ahead, is taken after it; the sync fails. The next one pulls both back and goes
        // on from part 4.
        let b = try Device(service, token: try await service.newToken()) { $0.uploadBatchRows = 10 }
        try people(b, 60, "b")
        b.transport.failPush(of: part(2), .afterStoring)
        do {
            try await b.client.sync()
            throw ConformanceFailure("a sync whose part's answer was lost succeeded")
        } catch is SyncClientError {}
        try await b.client.sync()
        try await a.client.sync()
        try expect(try await b.client.pendingChangeCount() == 0, "b has changes pending after its upload")
        try await expectAlike([a, b], service, "after two uploads sent part ahead of part")
        let counts = try a.rows("SELECT last_name, count(*), count(DISTINCT first_name) FROM person GROUP BY last_name ORDER BY last_name")
        try expect(counts == ["a|80|80", "b|60|60"], "a's people by name: \(counts)")
        let afterB = try await service.head() - start
        try expect(afterB == 14, "the service holds \(afterB) transactions, not 14 parts")
    }
}
