import Foundation
import Sluice
import SluiceSyncClient
import SluiceSyncProtocol

/// Partial sync's property over random workloads: random edits on two whole devices (and
/// the subset device, some offline), random subscription changes; after each round the
/// subset device holds exactly the service's rows its subscriptions keep (computed here in
/// Swift from the service's rows, not by the code under test), its live queries, rebuilt
/// from their changesets alone, equal the queries re-run on a plain connection, and every
/// whole device equals the service.
extension SyncConformance {
    /// The seeds the scenario list runs.
    static let subsetSeeds: [UInt64] = Array(11...18)

    /// Packages whose recipient lives in Oslo.
    public static let oslo = SyncSubscription(table: "package", where: Column("recipient.city") == "Oslo")

    public static func subsetsConvergeWhileSubscriptionsChange(_ service: any ConformanceService, seed: UInt64) async throws {
        let token = try await service.newToken()
        let writers = try (0..<2).map { _ in try Device(service, token: token) }
        let subset = try Device(service, token: token) { $0.subscriptions = [oslo] }
        let mirrors = [
            LiveMirror(subset, subset.store.rows(in: "package").sorted(by: [Ordering("created_at"), Ordering("id")]),
                       sql: "SELECT * FROM package ORDER BY created_at, id"),
            LiveMirror(subset, try subset.store.rows(in: "person").filter("city == 'Oslo'").sorted(by: [Ordering("id")]),
                       sql: "SELECT * FROM person WHERE city = 'Oslo' ORDER BY id"),
        ]
        var random = SeededRandom(state: seed)
        let cities = ["Oslo", "Bergen", "Rome"]
        let choices: [SyncSubscription] = cities.map { SyncSubscription(table: "package", where: Column("recipient.city") == $0) }
            + ["c", "f"].map { SyncSubscription(table: "package", where: Column("created_at") >= $0) }
            + [SyncSubscription(table: "package")]
        var subscriptions = [oslo]
        // New rows take rowids no row had on their device: a row made on the rowid of a row
        // a pulled delete removed is pushed under that row's global id, a fault of whole
        // devices this test is not about (seed 14 met it).
        var highest: [ObjectIdentifier: Int64] = [:]
        func fresh(_ device: Device, _ table: String) throws -> Int64 {
            let key = ObjectIdentifier(device)
            let top = Int64(try device.rows("SELECT coalesce(max(rowid), 0) FROM \(table)").first ?? "0") ?? 0
            highest[key] = max(highest[key] ?? 0, top) + 1
            return highest[key] ?? 1
        }
        for round in 0..<12 {
            for device in writers + (random.next(3) == 0 ? [subset] : []) {
                for _ in 0..<(1 + random.next(4)) {
                    let people = try device.rows("SELECT id FROM person ORDER BY id").compactMap { Int64($0) }
                    let packages = try device.rows("SELECT id FROM package ORDER BY id").compactMap { Int64($0) }
                    let person = people.isEmpty ? nil : people[random.next(people.count)]
                    let package = packages.isEmpty ? nil : packages[random.next(packages.count)]
                    let date = String(UnicodeScalar(UInt8(97 + random.next(8))))
                    switch random.next(8) {
                    case 0, 1:
                        try device.sql("INSERT INTO person (id, first_name, last_name, city) VALUES (?, ?, 'R', ?)",
                                       [.integer(try fresh(device, "person")), .text("p\(random.next(1000))"), .text(cities[random.next(cities.count)])])
                    case 2:
                        if let person { try device.sql("UPDATE person SET city = ? WHERE id = ?", [.text(cities[random.next(cities.count)]), .integer(person)]) }
                    case 3:
                        if let person {
                            try device.sql("INSERT INTO package (id, recipient_id, sender_id, created_at) VALUES (?, ?, ?, ?)",
                                           [.integer(try fresh(device, "package")), .integer(person),
                                            people.isEmpty ? .null : .integer(people[random.next(people.count)]), .text(date)])
                        }
                    case 4:
                        if let package { try device.sql("UPDATE package SET created_at = ? WHERE id = ?", [.text(date), .integer(package)]) }
                    case 5:
                        if let package, let person { try device.sql("UPDATE package SET recipient_id = ? WHERE id = ?", [.integer(person), .integer(package)]) }
                    case 6:
                        if let package { try device.sql("DELETE FROM package WHERE id = ?", [.integer(package)]) }
                    default:
                        if let person, random.next(2) == 0 { try device.sql("DELETE FROM person WHERE id = ?", [.integer(person)]) }
                    }
                }
            }
            for writer in writers { try await writer.client.sync() }
            if random.next(3) == 0 {
                let first = choices[random.next(choices.count)]
                subscriptions = random.next(2) == 0 ? [first] : [first, SyncSubscription(table: "person", where: Column("city") == cities[random.next(cities.count)])]
                try await subset.client.subscribe(subscriptions)
            } else {
                try await subset.client.sync()
            }
            // The subset device's own edits went to the service: the writers take them too,
            // and what they push in turn (a fix-up) reaches everyone on the next pass.
            for _ in 0..<2 {
                for writer in writers { try await writer.client.sync() }
            }
            try await subset.client.sync()
            let stored = try await service.content()
            let (held, wanted) = (try subset.content(), expected(stored, subscriptions))
            try expect(held == wanted, "round \(round), seed \(seed): \(subscriptions.map(\.filter)) \(difference(held, wanted))")
            for writer in writers {
                let content = try writer.content()
                try expect(content == stored, "round \(round), seed \(seed): \(difference(content, stored))")
            }
            for mirror in mirrors { try mirror.check("round \(round), seed \(seed)") }
            let pending = try await subset.client.pendingChangeCount()
            try expect(pending == 0, "round \(round), seed \(seed): the subset device has \(pending) pending")
        }
    }

    /// A round after `since` sends the values of the rows the subscriptions keep and of the
    /// rows those point at, and no other: a changed person no kept package points at goes as
    /// `leave` (its id), not with its values.
    static func aRoundSendsNoRowsOutsideTheSubscriptions(_ service: any ConformanceService) async throws {
        let token = try await service.newToken()
        let full = try Device(service, token: token)
        let ana = try full.sql("INSERT INTO person (first_name, last_name, city) VALUES ('Ana', 'A', 'Oslo')")
        let cy = try full.sql("INSERT INTO person (first_name, last_name, city) VALUES ('Cy', 'C', 'Bergen')")
        try full.sql("INSERT INTO package (recipient_id, created_at) VALUES (?, '1')", [.integer(ana)])
        try full.sql("INSERT INTO package (recipient_id, created_at) VALUES (?, '2')", [.integer(cy)])
        try await full.client.sync()
        let since = try await service.head()
        try full.sql("UPDATE person SET email = 'new@example.com'")
        try await full.client.sync()
        let page = try await service.transport(token: token).rows(RowsRequest(since: since, subscriptions: [oslo]))
        let people = page.changes.filter { $0.op == .insert && $0.table == "person" }.map { $0.values?["first_name"] }
        try expect(people == [.text("Ana")], "only Ana, whom the kept package points at: \(page.changes)")
        let packages = page.changes.filter { $0.op == .insert && $0.table == "package" }.map { $0.values?["created_at"] }
        try expect(packages == [.text("1")], "only Ana's package (its path's parent changed): \(page.changes)")
        try expect(!page.changes.contains { $0.values?["first_name"] == .text("Cy") }, "Cy's values left the service: \(page.changes)")
    }

    /// A device that syncs one table, and a subset device changing what it syncs: each time
    /// it holds exactly what the service's rows give, and removes nothing anywhere else.
    static func subscriptionsChangeAtRunTime(_ service: any ConformanceService) async throws {
        let token = try await service.newToken()
        let full = try Device(service, token: token)
        for (name, city) in [("Ana", "Oslo"), ("Bo", "Bergen"), ("Cy", "Rome")] {
            let person = try full.sql("INSERT INTO person (first_name, last_name, city) VALUES (?, 'X', ?)", [.text(name), .text(city)])
            let package = try full.sql("INSERT INTO package (recipient_id, created_at) VALUES (?, ?)", [.integer(person), .text(name)])
            try full.sql("INSERT INTO package_content (package_id, title, weight, position) VALUES (?, 'box', 1, 0)", [.integer(package)])
        }
        try full.sql("INSERT INTO message (conversation_id, sender, text, sent_at) VALUES (1, 'ana', 'hi', '2026')")
        try await full.client.sync()
        // People only, from the whole history: the other tables' changes are not its business.
        let people = try Device(service, token: token) { $0.tables = ["person"] }
        try await people.client.sync()
        try expect(try people.rows("SELECT first_name FROM person ORDER BY 1") == ["Ana", "Bo", "Cy"], "the people-only device: \(try people.rows("SELECT first_name FROM person"))")
        try expect(try await people.client.quarantined().isEmpty, "the people-only device quarantined something")
        try people.sql("UPDATE person SET age = 30 WHERE first_name = 'Bo'")
        try await people.client.sync()
        try await full.client.sync()
        try expect(try full.rows("SELECT coalesce(age, 0) FROM person ORDER BY first_name") == ["0", "30", "0"], "Bo's age did not arrive")
        // A subset device changes what it syncs.
        let subset = try Device(service, token: token) { $0.subscriptions = [oslo] }
        try await subset.client.sync()
        let inOslo = expected(try await service.content(), [oslo])
        try expect(try subset.content() == inOslo, "Oslo: \(difference(try subset.content(), inOslo))")
        let steps: [[SyncSubscription]?] = [
            [SyncSubscription(table: "package", where: Column("created_at") >= "Bo"), SyncSubscription(table: "message")],
            [SyncSubscription(table: "person", where: Column("city") == "Bergen"), SyncSubscription(table: "package_content", where: Column("weight") >= 1)],
            nil,
            [oslo],
        ]
        for step in steps {
            try await subset.client.subscribe(step)
            let stored = try await service.content()
            let wanted = step.map { expected(stored, $0) } ?? stored
            let held = try subset.content()
            try expect(held == wanted, "\(step.map { $0.map(\.filter) } ?? []): \(difference(held, wanted))")
        }
        try expect(try await subset.client.pendingChangeCount() == 0, "the subset device has something pending")
        let stored = try await service.content()
        try expect(try full.content() == stored, "a subset device's removals went somewhere: \(difference(try full.content(), stored))")
    }

    /// Subscriptions the service cannot keep exactly are refused, naming why; so is a
    /// hostile page position; the client refuses what it can tell itself.
    static func subscriptionsTheServiceCannotKeepAreRefused(_ service: any ConformanceService) async throws {
        let token = try await service.newToken()
        let transport = service.transport(token: token)
        let cases: [(SyncSubscription, String)] = [
            (SyncSubscription(table: "package", filter: "contents.weight > 5"), "not a path through a foreign key"),
            (SyncSubscription(table: "package", filter: "ANY contents.weight > 5"), "ANY, ALL or NONE"),
            (SyncSubscription(table: "package_content", filter: "package.recipient.city == 'Oslo'"), "not a path through a foreign key"),
            (SyncSubscription(table: "package", filter: "recipient.town == 'Oslo'"), "unknown column 'town'"),
            (SyncSubscription(table: "person", filter: "MATCH 'oslo'"), "MATCH"),
            (SyncSubscription(table: "parcel"), "unknown table 'parcel'"),
        ]
        let hostile = RowsRequest(since: 0, subscriptions: [oslo], after: RowsPosition(subscription: -1, id: ""))
        for (request, message) in cases.map({ (RowsRequest(since: 0, subscriptions: [$0.0]), $0.1) }) + [(hostile, "names no part of this round")] {
            do {
                let page = try await transport.rows(request)
                throw ConformanceFailure("\(request.subscriptions.map(\.filter)) was answered: \(page.changes.count) changes")
            } catch SyncClientError.rejected(let status, let body) {
                try expect(status == 400 && body.message.contains(message), "\(request.subscriptions.map(\.filter)): \(status) \(body.message)")
            }
        }
        let device = try Device(service, token: token)
        for subscriptions in [[SyncSubscription(table: "nowhere")], [oslo, oslo]] {
            do {
                try await device.client.subscribe(subscriptions)
                throw ConformanceFailure("the client took \(subscriptions.map(\.table))")
            } catch is StoreError {}
        }
    }

    /// What is in `held` and not `wanted`, and the other way round.
    public static func difference(_ held: [String], _ wanted: [String]) -> String {
        "extra: \(Set(held).subtracting(wanted).sorted()), missing: \(Set(wanted).subtracting(held).sorted())"
    }

    /// What a device with `subscriptions` must hold, of a service's content (`lines`, as
    /// ``SyncContent`` renders it): the rows its filters keep and the rows those point at,
    /// transitively. Knows the filters the scenarios use.
    public static func expected(_ lines: [String], _ subscriptions: [SyncSubscription]) -> [String] {
        var rows: [String: [String: [String: String]]] = [:]
        for line in lines {
            let parts = line.split(separator: " ").map(String.init)
            var values: [String: String] = [:]
            for part in parts.dropFirst(2) {
                guard let equals = part.firstIndex(of: "=") else { continue }
                values[String(part[..<equals])] = String(part[part.index(after: equals)...])
            }
            rows[parts[0], default: [:]][parts[1]] = values
        }
        func text(_ value: String?) -> String? { value.flatMap { $0.hasPrefix("text:") ? String($0.dropFirst(5)) : nil } }
        func integer(_ value: String?) -> Int? { value.flatMap { $0.hasPrefix("integer:") ? Int($0.dropFirst(8)) : nil } }
        func parent(_ value: String?) -> String? { value.flatMap { $0.hasPrefix("→") ? String($0.dropFirst()) : nil } }
        var kept: Set<String> = []
        for subscription in subscriptions {
            for (id, values) in rows[subscription.table] ?? [:] {
                let keep: Bool = switch (subscription.table, subscription.filter, subscription.arguments?.first) {
                case (_, nil, _): true
                case ("package", "recipient.city == $0", .text(let city)?):
                    text(rows["person"]?[parent(values["recipient_id"]) ?? ""]?["city"]) == city
                case ("package", "created_at >= $0", .text(let date)?): (text(values["created_at"]) ?? "") >= date
                case ("person", "city == $0", .text(let city)?): text(values["city"]) == city
                case ("package_content", "weight >= $0", .integer(let weight)?): (integer(values["weight"]) ?? .min) >= Int(weight)
                default: false
                }
                if keep { kept.insert(subscription.table + " " + id) }
            }
        }
        var queue = Array(kept)
        while let key = queue.popLast() {
            let parts = key.split(separator: " ").map(String.init)
            for (column, target) in SyncContent.references[parts[0]] ?? [:] {
                guard let id = parent(rows[parts[0]]?[parts[1]]?[column]), rows[target]?[id] != nil, kept.insert(target + " " + id).inserted else { continue }
                queue.append(target + " " + id)
            }
        }
        return lines.filter { line in kept.contains(line.split(separator: " ").prefix(2).joined(separator: " ")) }
    }
}
