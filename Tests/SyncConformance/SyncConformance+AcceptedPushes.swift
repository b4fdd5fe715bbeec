import Foundation
import Sluice
import SluiceSyncClient
import SluiceSyncProtocol

/// Every push the service accepts applies on every device: random pushes from a hostile
/// client (attachments of the wrong size or never uploaded, references to rows that do not
/// exist, missing NOT NULL columns, CHECK violations, unknown columns, values of the wrong
/// kind, updates and deletes of rows that are not there); after each one the service
/// accepts, a fresh device syncs everything (eager attachments) and an old one goes on,
/// and the fresh device holds as many rows of each table as the service.
extension SyncConformance {
    static let acceptedPushSeeds: [UInt64] = [1, 2]

    /// One random change of a hostile client; `people` are the global ids of people it made.
    static func hostileChange(_ random: inout SeededRandom, step: Int, people: [String], held: SyncAttachment) -> SyncChange {
        let person = people.randomElement(using: &random) ?? "ghost-person"
        let ghost = "ghost-\(Int.random(in: 0..<1_000, using: &random))"
        switch Int.random(in: 0..<12, using: &random) {
        case 0: return SyncChange(table: "person", id: "h-p-\(step)", op: .insert, values: ["first_name": .text("P\(step)"), "last_name": .text("L")])
        case 1: return SyncChange(table: "person", id: "h-p-\(step)", op: .insert, values: ["first_name": .text("No last name")])
        case 2: return SyncChange(table: "person", id: person, op: .update, values: ["age": .text("not a number")])
        case 3: return SyncChange(table: "person", id: person, op: .update, values: ["nickname": .text("unknown column")])
        case 4: return SyncChange(table: "package", id: "h-k-\(step)", op: .insert,
                                  values: ["recipient_id": .reference(Bool.random(using: &random) ? person : ghost), "created_at": .text("2026-11-28")])
        case 5: return SyncChange(table: "package_content", id: "h-c-\(step)", op: .insert,
                                  values: ["package_id": .reference(ghost), "title": .text("t"), "weight": .integer(-5), "position": .integer(0)])
        case 6: return SyncChange(table: "photo", id: "h-f-\(step)", op: .insert, values: ["caption": .text("held \(step)"), "image": .attachment(held)])
        case 7: return SyncChange(table: "photo", id: "h-f-\(step)", op: .insert, values: [
            "caption": .text("wrong size \(step)"), "image": .attachment(SyncAttachment(hash: held.hash, size: held.size + Int64.random(in: 1...5, using: &random))),
        ])
        case 8: return SyncChange(table: "photo", id: "h-f-\(step)", op: .insert,
                                  values: ["caption": .text("never uploaded"), "image": .attachment(SyncAttachment(content: Data("nothing \(step)".utf8)))])
        case 9: return SyncChange(table: "photo", id: "h-f-\(step)", op: .insert, values: ["caption": .text("text image"), "image": .text("not bytes")])
        case 10: return SyncChange(table: "person", id: ghost, op: .update, values: ["city": .text("Nowhere")])
        default: return SyncChange(table: "person", id: Bool.random(using: &random) ? ghost : person, op: .delete)
        }
    }

    static func everyAcceptedPushAppliesOnAFreshDevice(_ service: any ConformanceService, seed: UInt64) async throws {
        let owner = try await photoDevice(service)
        let content = bytes(3_000, seed: seed)
        try owner.sql("INSERT INTO person (first_name, last_name) VALUES ('Ann', 'A')")
        try owner.sql("INSERT INTO photo (caption, image) VALUES ('owner', ?)", [.blob(content)])
        try await owner.client.sync()
        let held = SyncAttachment(content: content)
        let hostile = service.transport(token: try await service.newToken())

        var random = SeededRandom(state: seed &* 0x9E37_79B9_7F4A_7C15 | 1)
        var people: [String] = []
        var accepted = 0
        for step in 0..<40 {
            let head = try await service.head()
            let changes = (0..<Int.random(in: 1...2, using: &random)).map { offset in
                hostileChange(&random, step: step * 10 + offset, people: people, held: held)
            }
            let transaction = SyncTransaction(device: "hostile", local: Int64(step + 1), clock: HybridClock(date: Date()), changes: changes)
            do {
                guard case .accepted = try await hostile.push(PushRequest(device: "hostile", base: head, transactions: [transaction])) else {
                    throw ConformanceFailure("step \(step): a push on the head was not taken nor refused")
                }
            } catch SyncClientError.rejected(_, let body) {
                try expect(try await service.head() == head, "step \(step): a refused push applied something: \(body.message)")
                continue
            }
            accepted += 1
            people += changes.filter { $0.table == "person" && $0.op == .insert }.map(\.id)
            let fresh = try await photoDevice(service)
            do {
                try await fresh.client.sync()
                try await owner.client.sync()
            } catch {
                throw ConformanceFailure("step \(step): the service accepted \(changes) and a device cannot apply it: \(error)")
            }
            let stored = try await service.content()
            for table in ["person", "package", "package_content", "photo"] {
                let here = try fresh.rows("SELECT count(*) FROM \(table)")
                let there = stored.filter { $0.hasPrefix(table + " ") }.count
                try expect(here == ["\(there)"], "step \(step): the fresh device holds \(here) rows of \(table), the service \(there), after \(changes)")
            }
        }
        try expect(accepted > 3, "only \(accepted) of 40 pushes were accepted: the property was hardly tried")
    }
}
