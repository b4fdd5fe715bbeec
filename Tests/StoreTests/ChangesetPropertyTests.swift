import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

/// After every commit, the previous array with the changeset applied equals
/// the query run again: over random workloads, for several queries, for
/// commits by this store, by another connection, and by the sqlite3 shell.
@Suite(.timeLimit(.minutes(10)), .serialized) struct ChangesetPropertyTests {
    /// `tracked…`: the same, with the change log's foreign-writer triggers
    /// on `person`, so other processes' commits take the incremental path.
    enum Writer { case own, ownBursts, otherConnection, sqliteShell, trackedOtherConnection, trackedShell }

    struct Harness {
        let store: Store
        let path: String
        let people: [Mirror<Person>]
        let ages: Mirror<Person>       // observes only "age": compare ids and ages
        let rows: Mirror<Row>

        init(tracked: Bool = false) throws {
            let database = TemporaryDatabase()
            path = database.path
            store = try database.store(migrations: DemoSchema.migrations)
            if tracked { try store.trackForeignWriters(tables: ["person"]) }
            let all = store.objects(Person.self)
            people = [
                Mirror("all by first name", all.sorted(byKeyPath: "first_name")),
                Mirror("adults by age desc", try all.filter("age >= 30").sorted(by: [Ordering("age", descending: true), Ordering("last_name")])),
                Mirror("oslo or no email", try all.filter("city ==[c] 'oslo' OR email IS NULL").sorted(by: [Ordering("city"), Ordering("first_name")])),
                Mirror("z names or young", try all.filter("first_name BEGINSWITH[c] 'z' OR age < 20").sorted(byKeyPath: "email")),
                Mirror("ten youngest", all.sorted(byKeyPath: "age").limit(10)),
                Mirror("names like", try all.filter("NOT (first_name LIKE[c] '*o*') AND age BETWEEN 10 AND 70").sorted(by: [Ordering("last_name", descending: true)])),
            ]
            ages = Mirror("ages only", all.sorted(byKeyPath: "first_name"), keyPaths: ["age"])
            rows = Mirror("rows", try store.rows(in: "person").filter("last_name CONTAINS[c] 'o'").sorted(by: [Ordering("last_name", descending: true)]))
        }

        func ids() throws -> [Int64] {
            try store.read { db in try db.fetchRows(sql: "SELECT id FROM person").compactMap { Int64(sqliteValue: $0[0]) } }
        }

        /// Waits for delivery, then checks every mirror against a re-run of its query.
        func check(_ context: String, commits: Int) throws {
            store.waitForObservers()
            for mirror in people {
                let events = mirror.catchUp()
                #expect(events <= commits, "\(mirror.name): \(events) changesets for \(commits) commit(s) (\(context))")
                let expected = try mirror.results.fetch()
                #expect(mirror.array == expected, "\(mirror.name) (\(context))")
            }
            ages.catchUp()
            let expectedAges = try ages.results.fetch()
            #expect(ages.array.map { [$0.id, $0.age.map(Int64.init)] } == expectedAges.map { [$0.id, $0.age.map(Int64.init)] }, "ages (\(context))")
            rows.catchUp()
            #expect(rows.array == (try rows.results.fetch()), "rows (\(context))")
        }
    }

    @Test(arguments: [(Writer.own, 300, UInt64(1)), (.ownBursts, 300, 4), (.otherConnection, 100, 2), (.sqliteShell, 60, 3),
                      (.trackedOtherConnection, 100, 5), (.trackedShell, 60, 6)])
    func applyingChangesetsEqualsReRunningTheQuery(writer: Writer, transactions: Int, seed: UInt64) throws {
        let harness = try Harness(tracked: writer == .trackedShell || writer == .trackedOtherConnection)
        try harness.check("initial", commits: 1)
        var workload = Workload(seed: seed)
        let other = writer == .otherConnection || writer == .trackedOtherConnection ? try Store(path: harness.path) : nil
        for index in 0..<transactions {
            let statements = workload.transaction(ids: try harness.ids())
            let rollback = (writer == .own || writer == .ownBursts) && index % 13 == 12
            switch writer {
            case .own, .ownBursts:
                do {
                    try harness.store.write { tx in
                        for statement in statements { try tx.execute(sql: statement.sql, arguments: statement.arguments) }
                        if rollback { throw CancellationError() }
                    }
                } catch is CancellationError {}
            case .otherConnection, .trackedOtherConnection:
                try other?.write { tx in
                    for statement in statements { try tx.execute(sql: statement.sql, arguments: statement.arguments) }
                }
            case .sqliteShell, .trackedShell:
                try SQLiteShell.run(path: harness.path, "BEGIN;\n" + statements.map { $0.inlined + ";" }.joined(separator: "\n") + "\nCOMMIT;")
            }
            // Bursts: ten commits back to back, then one check of all their changesets.
            if writer == .ownBursts, index % 10 != 9 { continue }
            try harness.check("\(writer) transaction \(index): \(statements.map(\.sql))", commits: writer == .ownBursts ? 10 : (rollback ? 0 : 1))
        }
    }
}
