import Foundation
import SluiceSyncClient
import SluiceSyncProtocol

/// The rules that keep every copy equal whatever devices send: edits stamped at commit,
/// pushes on one base sequenced unless they write the same columns, column names as the
/// registered schema spells them.
extension SyncConformance {
    /// A edits offline, then B edits the same column later and syncs first: when A syncs,
    /// B's later edit wins (the last writer, not the last to sync).
    static func anEditIsStampedWhenCommitted(_ service: any ConformanceService) async throws {
        let (a, b) = try await devices(service)
        try a.sql("INSERT INTO person (first_name, last_name, city) VALUES ('Ada', 'A', 'Bergen')")
        try await a.client.sync()
        try await b.client.sync()
        try a.sql("UPDATE person SET city = 'Earlier'")
        try await Task.sleep(for: .milliseconds(50))
        try b.sql("UPDATE person SET city = 'Later'")
        for device in [b, a, b] { try await device.client.sync() }
        let cities = (try a.rows("SELECT city FROM person"), try b.rows("SELECT city FROM person"))
        try expect(cities.0 == ["Later"] && cities.1 == ["Later"], "a \(cities.0), b \(cities.1)")
        try await expectAlike([a, b], service, "after the edits")
    }

    static func pushesOnOneBaseAreSequencedUnlessTheyWriteTheSameColumns(_ service: any ConformanceService) async throws {
        let token = try await service.newToken()
        let a = try Device(service, token: token)
        let b = try Device(service, token: token)
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ada', 'A')")
        try b.sql("INSERT INTO person (first_name, last_name) VALUES ('Bo', 'B')")
        for device in [a, b, a] { try await device.client.sync() }
        // Each edits its own row, and a different column of the other's: B's push comes after
        // A's without B having pulled it, and is taken as it is.
        try a.sql("UPDATE person SET city = 'Oslo' WHERE first_name = 'Ada'")
        try a.sql("UPDATE person SET age = 30 WHERE first_name = 'Bo'")
        try b.sql("UPDATE person SET city = 'Riga' WHERE first_name = 'Bo'")
        try b.sql("UPDATE person SET email = 'ada@example.com' WHERE first_name = 'Ada'")
        let first = try await a.client.sync()
        try expect(first.behind == 0, "a's push was sent back: \(first)")
        let second = try await b.client.sync()
        try expect(second.behind == 0 && second.pulled == 2, "b's push: \(second)")
        try await a.client.sync()
        let expected = ["Ada|Oslo|-|ada@example.com", "Bo|Riga|30|-"]
        for device in [a, b] {
            let rows = try device.rows("SELECT first_name, coalesce(city, '-'), coalesce(age, '-'), coalesce(email, '-') FROM person ORDER BY 1")
            try expect(rows == expected, "\(rows)")
        }
        // Pushes on one base: one writing a column another wrote since is sent back to pull;
        // so is a delete of a row the history updated since, whatever the column.
        let base = try await service.head()
        let people = SyncContent.column("first_name", of: "person", in: try await service.content())
        guard let ada = people.first(where: { $0.value == "text:Ada" })?.key, let bo = people.first(where: { $0.value == "text:Bo" })?.key else {
            throw ConformanceFailure("the service's people: \(people)")
        }
        let transport = service.transport(token: token)
        func push(_ device: String, _ change: SyncChange) async throws -> SyncPushOutcome {
            try await transport.push(PushRequest(device: device, base: base, transactions: [
                SyncTransaction(device: device, local: 1, clock: HybridClock(date: Date()), changes: [change]),
            ]))
        }
        let tool = "tool-\(UUID().uuidString.prefix(8))"
        let outcomes = [
            try await push("\(tool)-1", SyncChange(table: "person", id: ada, op: .update, values: ["city": .text("Bergen")])),
            try await push("\(tool)-2", SyncChange(table: "person", id: ada, op: .update, values: ["CITY": .text("Tromsø")])),
            try await push("\(tool)-3", SyncChange(table: "person", id: ada, op: .update, values: ["age": .integer(41)])),
            try await push("\(tool)-4", SyncChange(table: "person", id: bo, op: .update, values: ["city": .text("Kyiv")])),
            try await push("\(tool)-5", SyncChange(table: "person", id: bo, op: .delete)),
        ]
        let taken = outcomes.map { if case .accepted = $0 { "taken" } else if case .behind = $0 { "behind" } else { "\($0)" } }
        try expect(taken == ["taken", "behind", "taken", "taken", "behind"], "the five pushes: \(taken)")
        try await a.client.sync()
        try await b.client.sync()
        let rows = try b.rows("SELECT first_name, city, coalesce(age, '-') FROM person ORDER BY 1")
        try expect(rows == ["Ada|Bergen|41", "Bo|Kyiv|30"], "b: \(rows)")
        try await a.client.sync()
        try await expectAlike([a, b], service, "after the tools' pushes")
    }

    static func columnNamesAreStoredAsTheSchemaSpellsThem(_ service: any ConformanceService) async throws {
        let token = try await service.newToken()
        let transport = service.transport(token: token)
        let device = "shouty-\(UUID().uuidString.prefix(8))"
        let id = "\(device)-p1"
        func push(_ local: Int64, _ change: SyncChange) async throws -> SyncPushOutcome {
            try await transport.push(PushRequest(device: device, base: try await service.head(), transactions: [
                SyncTransaction(device: device, local: local, clock: HybridClock(date: Date()), changes: [change]),
            ]))
        }
        guard case .accepted = try await push(1, SyncChange(table: "PERSON", id: id, op: .insert, values: ["First_Name": .text("Ada"), "LAST_NAME": .text("A"), "age": .integer(1)])),
              case .accepted = try await push(2, SyncChange(table: "Person", id: id, op: .update, values: ["AGE": .integer(5)])) else {
            throw ConformanceFailure("a push spelling names otherwise was not taken")
        }
        let stored = try await service.content().filter { $0.hasPrefix("person \(id) ") }
        try expect(stored == ["person \(id) age=integer:5 first_name=text:Ada last_name=text:A"], "stored as \(stored)")
        // One column twice in one change is refused, naming it.
        do {
            let outcome = try await push(3, SyncChange(table: "person", id: id, op: .update, values: ["AGE": .integer(6), "age": .integer(7)]))
            throw ConformanceFailure("a column written twice was taken: \(outcome)")
        } catch SyncClientError.rejected(let status, let body) {
            try expect(status == 400 && body.message.contains("age"), "\(status) \(body.message)")
        }
        let reader = try Device(service, token: token)
        try await reader.client.sync()
        try expect(try reader.rows("SELECT first_name, age FROM person") == ["Ada|5"], "the reader: \(try reader.rows("SELECT first_name, age FROM person"))")
    }
}
