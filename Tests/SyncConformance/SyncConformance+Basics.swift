import Foundation
import Sluice
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol

/// The sync loop's basics on any service: rows and references between devices, pulled
/// transactions as changesets of live queries, a page of pulls as one local transaction,
/// each column's conflict policy, a row deleted and inserted again, and what the service
/// refuses for not fitting the schema.
extension SyncConformance {
    /// The changesets of a live query, taken after the store's observers are done.
    final class Changesets<Element: Sendable>: @unchecked Sendable {
        // @unchecked Sendable: `events` is guarded by `lock`.
        private let lock = NSLock()
        private var events: [CollectionChange<Element>] = []
        private var token: ObservationToken?
        private let store: Store
        private let queue = DispatchQueue(label: "changesets")

        init(_ results: Results<Element>, of store: Store) {
            self.store = store
            token = results.observe(on: queue) { [weak self] change in
                guard let self else { return }
                self.lock.withLock { self.events.append(change) }
            }
        }

        deinit { token?.invalidate() }

        /// What arrived since the last call.
        func take() -> [CollectionChange<Element>] {
            store.waitForObservers()
            // Deliveries to the queue are asynchronous: wait for those under way.
            queue.sync {}
            return lock.withLock {
                defer { events = [] }
                return events
            }
        }
    }

    static func rowsAndReferencesReachAnotherDevice(_ service: any ConformanceService) async throws {
        let (a, b) = try await devices(service)
        let alice = try a.sql("INSERT INTO person (first_name, last_name, city) VALUES ('Alice', 'Aalto', 'Oslo')")
        try a.sql("INSERT INTO package (recipient_id, created_at) VALUES (?, '2026-01-01')", [.integer(alice)])
        // B has a person of its own first, so that local ids differ.
        try b.sql("INSERT INTO person (first_name, last_name) VALUES ('Bob', 'Berg')")
        for device in [a, b, a] { try await device.client.sync() }
        try expect(try b.rows("SELECT p.first_name FROM package k JOIN person p ON p.id = k.recipient_id") == ["Alice"], "b's package does not point at Alice")
        try expect(try a.content().count == 3, "a holds \(try a.content().count) rows, not 3")
        try await expectAlike([a, b], service, "after three syncs")
        let pending = (try await a.client.pendingChangeCount(), try await b.client.pendingChangeCount())
        try expect(pending == (0, 0), "still pending: \(pending)")
    }

    /// Pulled transactions reach live queries as changesets; a page of them is one local
    /// transaction (one changeset); a device whose unpushed edit a page overwrote is sent
    /// back, applies the page transaction by transaction, and its later edit wins.
    static func pulledPagesAreOneChangesetEach(_ service: any ConformanceService) async throws {
        let (a, b) = try await devices(service)
        try await a.client.sync()
        try await b.client.sync()
        let changes = Changesets(b.store.objects(Person.self).sorted(by: \.lastName), of: b.store)
        _ = changes.take()
        for name in ["Cole", "Ames", "Berg"] {
            try a.sql("INSERT INTO person (first_name, last_name) VALUES ('P', ?)", [.text(name)])
        }
        try await a.client.sync()
        let before = try b.store.currentToken
        let report = try await b.client.sync()
        try expect(report.pulled == 3, "b pulled \(report.pulled)")
        let logged = try b.store.changes(since: before)
        try expect(logged.count == 1 && logged.first?.author == "sync" && logged.first?.changes.count == 3, "the page was logged as \(logged)")
        let events = changes.take()
        guard events.count == 1, case .update(let people, let deletions, let insertions, _) = events[0] else {
            throw ConformanceFailure("the page was not one changeset: \(events)")
        }
        try expect(people.map(\.lastName) == ["Ames", "Berg", "Cole"] && deletions.isEmpty && insertions == [0, 1, 2],
                   "the changeset: \(people.map(\.lastName)), deletions \(deletions), insertions \(insertions)")
        // B's unpushed edit of a column A wrote since: A's three transactions are applied one
        // by one, each settling against what the ones before it overwrote; B's later edit wins.
        for age in 1...3 {
            try a.sql("UPDATE person SET age = ?, city = ? WHERE last_name = 'Ames'", [.integer(Int64(age)), .text("City\(age)")])
        }
        try await a.client.sync()
        try b.sql("UPDATE person SET age = 99 WHERE last_name = 'Ames'")
        let beforeEdit = try b.store.currentToken
        let rebased = try await b.client.sync()
        try expect(rebased.behind == 1 && rebased.pulled == 3 && rebased.pushed == 1, "the rebase: \(rebased)")
        let pulled = try b.store.changes(since: beforeEdit).filter { $0.author == "sync" }
        try expect(pulled.count == 3, "b applied \(pulled.count) pulled transactions, not 3")
        try await a.client.sync()
        try expect(try a.rows("SELECT age || ' ' || city FROM person WHERE last_name = 'Ames'") == ["99 City3"], "Ames on a: \(try a.rows("SELECT age, city FROM person WHERE last_name = 'Ames'"))")
        try await expectAlike([a, b], service, "after the rebase")
    }

    static func eachColumnFollowsItsPolicy(_ service: any ConformanceService) async throws {
        // B writes after A (a later clock), A pushes first.
        let token = try await service.newToken()
        let a = try Device(service, token: token)
        let b = try Device(service, token: token) { configuration in
            configuration.columnPolicies["person.street"] = .serverWins
            configuration.columnPolicies["person.email"] = .deviceWins
            configuration.columnPolicies["person.age"] = .merge { conflict in
                guard case .integer(let local) = conflict.local, case .integer(let remote) = conflict.remote else { return conflict.remote }
                let base: Int64 = if case .integer(let base)? = conflict.base { base } else { 0 }
                return .integer(base + (local - base) + (remote - base))
            }
        }
        try a.sql("INSERT INTO person (first_name, last_name, city, street, email, age) VALUES ('P', 'Q', 'c0', 's0', 'e0', 10)")
        try await a.client.sync()
        try await b.client.sync()
        try a.sql("UPDATE person SET city = 'cA', street = 'sA', email = 'eA', age = 11")
        try await Task.sleep(for: .milliseconds(5))
        try b.sql("UPDATE person SET city = 'cB', street = 'sB', email = 'eB', age = 15")
        for device in [a, b, a] { try await device.client.sync() }
        // city: last writer (B); street: the service's (A's); email: B's own; age: merged 10 + 1 + 5.
        let rows = (try a.rows("SELECT city, street, email, age FROM person"), try b.rows("SELECT city, street, email, age FROM person"))
        try expect(rows.0 == ["cB|sA|eB|16"] && rows.1 == ["cB|sA|eB|16"], "a \(rows.0), b \(rows.1)")
        try await expectAlike([a, b], service, "after the policies")
    }

    /// sqlite-data #418: a row deleted and inserted again with the same id, in one sync and
    /// across syncs.
    static func aRowDeletedAndInsertedAgainSyncs(_ service: any ConformanceService) async throws {
        let (a, b) = try await devices(service)
        try a.sql("INSERT INTO person (id, first_name, last_name) VALUES (7, 'Old', 'Row')")
        try await a.client.sync()
        try await b.client.sync()
        try a.sql("DELETE FROM person WHERE id = 7")
        try a.sql("INSERT INTO person (id, first_name, last_name) VALUES (7, 'New', 'Row')")
        try await a.client.sync()
        try await b.client.sync()
        try expect(try b.rows("SELECT first_name FROM person") == ["New"], "b after one sync: \(try b.rows("SELECT first_name FROM person"))")
        try a.sql("DELETE FROM person WHERE id = 7")
        try await a.client.sync()
        try await b.client.sync()
        try a.sql("INSERT INTO person (id, first_name, last_name) VALUES (7, 'Again', 'Row')")
        try await a.client.sync()
        try await b.client.sync()
        try expect(try b.rows("SELECT first_name FROM person") == ["Again"], "b after two: \(try b.rows("SELECT first_name FROM person"))")
        try await expectAlike([a, b], service, "after the reinserts")
    }

    /// A push naming an unknown table or column, a value of another type, or leaving out a
    /// NOT NULL column is refused with 400 naming it, and appends nothing.
    static func pushesThatDoNotFitTheSchemaAreRefused(_ service: any ConformanceService) async throws {
        let transport = service.transport(token: try await service.newToken())
        let device = "conformance-s-\(UUID().uuidString.prefix(8))"
        let base = try await service.head()
        let cases: [(SyncChange, String)] = [
            (SyncChange(table: "sqlite_master", id: "x", op: .delete), "unknown table 'sqlite_master'"),
            (SyncChange(table: "person", id: "p", op: .update, values: ["id\"; DROP TABLE x; --": .integer(1)]), "unknown column"),
            (SyncChange(table: "person", id: "p", op: .update, values: ["age": .text("old")]), "person.age"),
            (SyncChange(table: "person", id: "p", op: .insert, values: ["first_name": .text("A")]), "last_name"),
        ]
        for (change, message) in cases {
            do {
                let outcome = try await transport.push(PushRequest(device: device, base: base, transactions: [
                    SyncTransaction(device: device, local: 1, clock: HybridClock(date: Date()), changes: [change]),
                ]))
                throw ConformanceFailure("\(change.table) \(change.values ?? [:]) was taken: \(outcome)")
            } catch SyncClientError.rejected(let status, let body) {
                try expect(status == 400 && body.message.contains(message), "\(change.table) \(change.values ?? [:]): \(status) \(body.message)")
            }
        }
        try expect(try await service.head() == base, "a refused push moved the head")
    }
}
