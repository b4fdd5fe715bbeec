import Foundation
import Sluice
import SluiceSyncClient
import SluiceSyncProtocol

/// Scenarios of what the service does to the rows a push leaves: its ON DELETE actions and
/// the CHECK constraints of the registered tables (the demo's: a package's recipient
/// CASCADE, a content's `CHECK (weight >= 0)`).
extension SyncConformance {
    static func parentsDeletedLeaveNoChildren(_ service: any ConformanceService) async throws {
        // The sqlite3 shell deletes a person with a package: its foreign keys are off, so the
        // package stays on that device until the service's CASCADE comes back to it.
        let (a, b) = try await devices(service)
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ann', 'Berg')")
        try a.sql("INSERT INTO package (recipient_id, created_at) SELECT id, '2026-11-28' FROM person WHERE first_name = 'Ann'")
        try await a.client.sync()
        try await b.client.sync()
        try expect(try packages(of: "Ann", on: [a, b]) == [1, 1], "the package did not reach b")
        try a.shell("DELETE FROM person WHERE first_name = 'Ann';")
        // a's sync pulls the service's own transaction that follows its push.
        try await a.client.sync()
        try expect(try packages(on: [a]) == [0], "a's package after its sync: \(try packages(on: [a]))")
        try await b.client.sync()
        try expect(try packages(on: [a, b]) == [0, 0], "packages after the shell deleted their recipient: \(try packages(on: [a, b]))")
        // Apart: a deletes a person while b gives them a package, in either order.
        for deleteFirst in [true, false] {
            let (a, b) = try await devices(service)
            let name = "Bo\(deleteFirst ? 1 : 2)"
            try a.sql("INSERT INTO person (first_name, last_name) VALUES ('\(name)', 'Lund')")
            try await a.client.sync()
            try await b.client.sync()
            try a.sql("DELETE FROM person WHERE first_name = '\(name)'")
            try b.sql("INSERT INTO package (recipient_id, created_at) SELECT id, '2026-11-28' FROM person WHERE first_name = '\(name)'")
            for device in deleteFirst ? [a, b, a] : [b, a, b] { try await device.client.sync() }
            let people = try (a.people(), b.people())
            try expect(try packages(on: [a, b]) == [0, 0] && people.0 == people.1 && !people.0.contains { $0.hasPrefix(name + " ") },
                       "\(deleteFirst ? "delete first" : "package first"): packages \(try packages(on: [a, b])), a \(people.0), b \(people.1)")
            let pending = (try await a.client.pendingChangeCount(), try await b.client.pendingChangeCount())
            try expect(pending == (0, 0), "still pending: \(pending)")
        }
    }

    /// How many packages each device holds (for the person named `first`, when given).
    static func packages(of first: String? = nil, on devices: [Device]) throws -> [Int64] {
        try devices.map { device in
            let rows = try device.store.read { db in
                try db.fetchRows(sql: "SELECT count(*) FROM package p LEFT JOIN person r ON r.id = p.recipient_id WHERE ?1 IS NULL OR r.first_name = ?1",
                                 arguments: [first.map { .text($0) } ?? .null])
            }
            if case .integer(let count)? = rows.first?.values.first { return count }
            return -1
        }
    }

    static func checkConstraintsAreTheServicesToo(_ service: any ConformanceService) async throws {
        let transport = service.transport(token: try await service.newToken())
        let device = "conformance-c-\(UUID().uuidString.prefix(8))"
        let clock = HybridClock(date: Date())
        let person = SyncChange(table: "person", id: "\(device)-p", op: .insert, values: ["first_name": .text("C"), "last_name": .text("Check")])
        let package = SyncChange(table: "package", id: "\(device)-k", op: .insert,
                                 values: ["recipient_id": .reference("\(device)-p"), "sender_id": .null, "created_at": .text("2026-11-28")])
        func content(weight: Int64) -> SyncChange {
            SyncChange(table: "package_content", id: "\(device)-c", op: .insert,
                       values: ["package_id": .reference("\(device)-k"), "title": .text("Books"), "weight": .integer(weight), "position": .integer(0)])
        }
        func refused(_ local: Int64, _ changes: [SyncChange], _ what: String) async throws {
            let base = try await service.head()
            do {
                let outcome = try await transport.push(PushRequest(device: device, base: base, transactions: [
                    SyncTransaction(device: device, local: local, clock: clock.tick(at: Date()), changes: changes),
                ]))
                throw ConformanceFailure("\(what) was taken: \(outcome)")
            } catch SyncClientError.rejected(let status, let body) {
                try expect(status == 400 && body.message.contains("CHECK constraint failed") && body.message.contains("package_content \(device)-c"),
                           "\(what): \(status) \(body.message)")
            }
            try expect(try await service.head() == base, "\(what) moved the head")
        }
        try await refused(1, [person, package, content(weight: -1)], "an insert weighing -1")
        let base = try await service.head()
        guard case .accepted(let response) = try await transport.push(PushRequest(device: device, base: base, transactions: [
            SyncTransaction(device: device, local: 1, clock: clock.tick(at: Date()), changes: [person, package, content(weight: 3)]),
        ])) else { throw ConformanceFailure("a content weighing 3 was not taken") }
        try expect(response.appended == 1, "a content weighing 3: \(response)")
        // An update is checked against the row as stored (the column named in another case).
        try await refused(2, [SyncChange(table: "package_content", id: "\(device)-c", op: .update, values: ["WEIGHT": .integer(-5)])], "an update to -5")
    }
}
