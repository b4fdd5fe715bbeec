import Foundation
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// Every push the service accepts applies on every device: random pushes from a hostile
/// client (attachments of the wrong size or never uploaded, references to rows that do not
/// exist, missing NOT NULL columns, CHECK violations, unknown columns, values of the wrong
/// kind, updates and deletes of rows that are not there), and after each one the service
/// accepts, a fresh device syncs everything (eager attachments) and an old one goes on.
extension SplitMix64 {
    /// A number below `bound`.
    mutating func next(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

@Suite(.serialized, .timeLimit(.minutes(10)), .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncAcceptedPushTests {
    /// One random change of a hostile client; `people` are the global ids of people it made.
    static func change(_ random: inout SplitMix64, step: Int, people: [String], held: SyncAttachment) -> SyncChange {
        let person = people.isEmpty ? "ghost-person" : people[random.next(people.count)]
        let ghost = "ghost-\(random.next(1_000))"
        switch random.next(12) {
        case 0: return SyncChange(table: "person", id: "h-p-\(step)", op: .insert, values: ["first_name": .text("P\(step)"), "last_name": .text("L")])
        case 1: return SyncChange(table: "person", id: "h-p-\(step)", op: .insert, values: ["first_name": .text("No last name")])
        case 2: return SyncChange(table: "person", id: person, op: .update, values: ["age": .text("not a number")])
        case 3: return SyncChange(table: "person", id: person, op: .update, values: ["nickname": .text("unknown column")])
        case 4: return SyncChange(table: "package", id: "h-k-\(step)", op: .insert,
                                  values: ["recipient_id": .reference(random.next(2) == 0 ? person : ghost), "created_at": .text("2026-11-28")])
        case 5: return SyncChange(table: "package_content", id: "h-c-\(step)", op: .insert,
                                  values: ["package_id": .reference(ghost), "title": .text("t"), "weight": .integer(-5), "position": .integer(0)])
        case 6: return SyncChange(table: "photo", id: "h-f-\(step)", op: .insert, values: ["caption": .text("held \(step)"), "image": .attachment(held)])
        case 7: return SyncChange(table: "photo", id: "h-f-\(step)", op: .insert,
                                  values: ["caption": .text("wrong size \(step)"), "image": .attachment(SyncAttachment(hash: held.hash, size: held.size + Int64(1 + random.next(5))))])
        case 8: return SyncChange(table: "photo", id: "h-f-\(step)", op: .insert,
                                  values: ["caption": .text("never uploaded"), "image": .attachment(SyncAttachment(content: Data("nothing \(step)".utf8)))])
        case 9: return SyncChange(table: "photo", id: "h-f-\(step)", op: .insert, values: ["caption": .text("text image"), "image": .text("not bytes")])
        case 10: return SyncChange(table: "person", id: ghost, op: .update, values: ["city": .text("Nowhere")])
        default: return SyncChange(table: "person", id: random.next(2) == 0 ? ghost : person, op: .delete)
        }
    }

    @Test(arguments: [1, 2] as [UInt64])
    func everyAcceptedPushAppliesOnAFreshDevice(seed: UInt64) async throws {
        let files = TemporaryDatabase()
        let space = try SyncAttachmentTests.space(files)
        let owner = try SyncAttachmentTests.PhotoDevice(space)
        let content = SyncAttachmentTests.bytes(3_000, seed: seed)
        try owner.sql("INSERT INTO person (first_name, last_name) VALUES ('Ann', 'A')")
        try owner.sql("INSERT INTO photo (caption, image) VALUES ('owner', ?)", [.blob(content)])
        try await owner.client.sync()
        let held = SyncAttachment(content: content)

        var random = SplitMix64(seed: seed)
        var people: [String] = []
        var accepted = 0
        for step in 0..<30 {
            let head = try space.head()
            let changes = (0..<(1 + random.next(3))).map { offset in Self.change(&random, step: step * 10 + offset, people: people, held: held) }
            let transaction = SyncTransaction(device: "hostile", local: Int64(step + 1), clock: HybridClock(date: Date()), changes: changes)
            let (status, body) = try await SyncRequests.push(PushRequest(device: "hostile", base: head, transactions: [transaction]), to: space, token: space.token)
            guard status == 200 else {
                #expect(try space.head() == head, "a refused push applies nothing: \(body)")
                continue
            }
            accepted += 1
            people += changes.filter { $0.table == "person" && $0.op == .insert }.map(\.id)
            let fresh = try SyncAttachmentTests.PhotoDevice(space)
            do {
                try await fresh.client.sync()
                try await owner.client.sync()
            } catch {
                Issue.record("step \(step): the service accepted \(changes) and a device cannot apply it: \(error)")
                return
            }
            for table in ["person", "package", "package_content", "photo"] {
                let here: [Row] = try await fresh.store.read { db in try db.fetchRows(sql: "SELECT count(*) FROM \(table)") }
                let stored = try SyncRequests.storedRows(space, table: table)
                #expect(here.first?[0] == .integer(Int64(stored.count)), "step \(step): \(table) as the service holds it: \(stored) after \(changes)")
            }
        }
        #expect(accepted > 3, "some pushes were accepted (\(accepted))")
    }
}
