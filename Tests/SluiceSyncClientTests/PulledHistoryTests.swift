import Foundation
import SluiceDemo
@testable import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// How a device that pulls a long history keeps track of what it has not pushed: the
/// engine applied directly (no service, no PostgreSQL), pulled transaction by transaction,
/// as `SyncClient` applies each page.
@Suite(.timeLimit(.minutes(10))) struct PulledHistoryTests {
    let configuration = SyncConfiguration(tables: DemoSchema.syncedTables)

    /// A pulled transaction from another device that inserts one person.
    func pulledPerson(_ seq: Int64) -> SyncTransaction {
        SyncTransaction(seq: seq, device: "other-device", local: seq, clock: HybridClock(rawValue: seq << 16), changes: [
            SyncChange(table: "person", id: "person-\(seq)", op: .insert,
                       values: ["first_name": .text("Pulled\(seq)"), "last_name": .text("Person"), "age": .integer(seq)]),
        ])
    }

    /// A demo store with the device's sync state, and its engine.
    func syncedDemoStore() throws -> (Store, SyncEngine) {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let engine = SyncEngine(configuration: configuration)
        try SyncStateFormat.migrate(store)
        _ = try store.write { db in try engine.prepare(db) }
        return (store, engine)
    }

    func pushedMark(_ store: Store, _ engine: SyncEngine) throws -> Int64 {
        try #require(try store.read { db in try engine.loadState(db) }).pushed
    }

    @Test("a local transaction that changed no synced table does not hold the pushed mark back while pulling")
    func pushedMarkFollowsPulls() throws {
        let store = try TemporaryDatabase().store()
        // The migration writes app_state (not synced): a local transaction with nothing to push.
        try store.migrate(DemoSchema.migrations)
        let engine = SyncEngine(configuration: configuration)
        try SyncStateFormat.migrate(store)
        _ = try store.write { db in try engine.prepare(db) }
        #expect(try store.read { db in try engine.hasLocalTransactions(after: HistoryToken(databaseID: db.currentHistoryToken().databaseID, sequence: 0), db) } == false)

        for seq in Int64(1)...5 {
            _ = try store.write { db in try engine.apply(pulledPerson(seq), db) }
            // Nothing of the device's own is pending: the mark moves up with each pulled
            // transaction, so the next one's scan starts there, not at the beginning. (It is
            // the head the applying transaction saw: that one is numbered when it commits.)
            let (pushed, head) = (try pushedMark(store, engine), try store.currentToken.sequence)
            #expect(pushed == head - 1, "after pulled transaction \(seq): pushed \(pushed), head \(head)")
        }
        #expect(try store.read { db in try engine.pendingCount(db) } == 0)

        // A local edit of a synced table is pending: the mark stays before it while more
        // is pulled, and the edit is still there to push afterwards.
        try store.write { db in try db.execute(sql: "UPDATE person SET age = 99 WHERE first_name = 'Pulled2'") }
        let beforeEdit = try pushedMark(store, engine)
        #expect(try store.read { db in try engine.hasLocalTransactions(after: HistoryToken(databaseID: db.currentHistoryToken().databaseID, sequence: beforeEdit), db) })
        for seq in Int64(6)...8 {
            _ = try store.write { db in try engine.apply(pulledPerson(seq), db) }
            #expect(try pushedMark(store, engine) == beforeEdit, "after pulled transaction \(seq)")
        }
        let pending = try store.read { db in try engine.unpushed(try #require(try engine.loadState(db)), db) }
        #expect(pending.count == 1)
        #expect(pending.first?.1.map(\.table) == ["person"])
        #expect(try store.read { db in try db.fetchCount(table: "person") } == 8)
    }

    @Test("only transactions written here that changed a synced table count as local")
    func localTransactionsCountSyncedTablesOnly() throws {
        let (store, engine) = try syncedDemoStore()
        let start = try store.currentToken.sequence

        // An unsynced table's change, then a pulled (author "sync") change of a synced table
        // right after it: the first transaction's change range must end where the next begins.
        try store.write { db in try db.execute(sql: "UPDATE app_state SET temperature_low = temperature_low - 1 WHERE id = 1") }
        _ = try store.write { db in try engine.apply(pulledPerson(1), db) }
        #expect(try store.read { db in try engine.hasLocalTransactions(after: HistoryToken(databaseID: db.currentHistoryToken().databaseID, sequence: start), db) } == false)

        // A transaction that changed both kinds of table counts.
        try store.write { db in
            try db.execute(sql: "UPDATE app_state SET temperature_low = temperature_low - 1 WHERE id = 1")
            try db.execute(sql: "UPDATE person SET age = 30 WHERE first_name = 'Pulled1'")
        }
        #expect(try store.read { db in try engine.hasLocalTransactions(after: HistoryToken(databaseID: db.currentHistoryToken().databaseID, sequence: start), db) })

        // A foreign writer's change of a synced table (through the log's triggers) counts too.
        let later = try store.currentToken.sequence
        #expect(try store.read { db in try engine.hasLocalTransactions(after: HistoryToken(databaseID: db.currentHistoryToken().databaseID, sequence: later), db) } == false)
        try store.trackForeignWriters(tables: ["person"])
        try SQLiteShell.run(path: store.path, "UPDATE person SET age = 31 WHERE first_name = 'Pulled1';")
        #expect(try store.read { db in try engine.hasLocalTransactions(after: HistoryToken(databaseID: db.currentHistoryToken().databaseID, sequence: later), db) })
    }

    /// A new device pulls before its first push (`sync()` does, having nothing pushed yet):
    /// an edit made between that pull and the push is the device's to send. The first push
    /// uploads the rows that did not come from the service and takes the log before it as
    /// covered by that upload; pulled rows are not uploaded, so their edits were dropped
    /// (`SyncFaultTests.twoServiceInstancesOnOneDatabase` once ended with a city on one
    /// device that the service never got, pending 0).
    @Test("edits of pulled rows made before the device's first push are pushed")
    func editsOfPulledRowsBeforeTheFirstPushArePushed() throws {
        let (store, engine) = try syncedDemoStore()
        for seq in Int64(1)...3 { _ = try store.write { db in try engine.apply(pulledPerson(seq), db) } }
        // A row of its own before the first push: uploaded as a row.
        try store.write { db in try db.execute(sql: "INSERT INTO person (first_name, last_name) VALUES ('Mine', 'Here')") }
        try store.write { db in try db.execute(sql: "UPDATE person SET city = 'London' WHERE first_name = 'Pulled1'") }
        try store.write { db in try db.execute(sql: "DELETE FROM person WHERE first_name = 'Pulled2'") }
        #expect(try store.read { db in try engine.pendingCount(db) } == 3)

        var sent: [SyncChange] = []
        while let push = try store.write({ db in try engine.makePush(db) }) {
            sent += push.request.transactions.flatMap(\.changes)
            _ = try store.write { db in
                if let upload = push.upload {
                    try engine.uploaded(upload, head: nil, served: 0, db)
                } else {
                    try engine.pushed(through: push.last ?? 0, head: nil, db)
                }
            }
        }
        let described = sent.map { "\($0.op.rawValue) \($0.id) \(($0.values ?? [:]).keys.sorted())" }
        #expect(sent.contains { $0.op == .update && $0.id == "person-1" && $0.values?["city"] == .text("London") }, "sent: \(described)")
        #expect(sent.contains { $0.op == .delete && $0.id == "person-2" }, "sent: \(described)")
        #expect(sent.filter { $0.op == .insert && $0.values?["first_name"] == .text("Mine") }.count == 1, "sent: \(described)")
        #expect(!sent.contains { $0.id == "person-3" }, "sent: \(described)")
        #expect(try store.read { db in try engine.pendingCount(db) } == 0)
    }

    /// The origins of pulled transactions (who wrote each, for `history()` and undo) follow
    /// the log's retention: before, `sluice_sync_origin` kept a row per pulled transaction
    /// for ever.
    @Test("origins of pulled transactions go when retention removes those transactions from the log")
    func originsFollowTheLogsRetention() throws {
        var settings = Store.Configuration()
        settings.historyRetention = .transactions(3)
        let store = try Store(path: TemporaryDatabase().path, migrations: DemoSchema.migrations, configuration: settings)
        let engine = SyncEngine(configuration: configuration)
        try SyncStateFormat.migrate(store)
        _ = try store.write { db in try engine.prepare(db) }
        for seq in Int64(1)...12 {
            _ = try store.write { db in try engine.apply(pulledPerson(seq), db) }
            // A round's push finds nothing of its own and acknowledges the log through the
            // pulled transactions, so retention may remove them.
            #expect(try store.write { db in try engine.makePush(db) } == nil)
            _ = try store.pruneHistory()
        }
        _ = try store.write { db in try engine.apply(pulledPerson(13), db) }    // records after the last prune
        let pruned = try store.earliestToken.sequence
        let current = try store.currentToken.sequence
        try #require(pruned > 0, "retention removed nothing: the test would show nothing")
        let origins = try store.read { db in
            try db.fetchRows(sql: "SELECT seq FROM sluice_sync_origin ORDER BY seq").compactMap { row -> Int64? in
                if case .integer(let seq) = row[0] { seq } else { nil }
            }
        }
        // Exactly the transactions the log still holds, each a pulled one with its writer.
        #expect(origins == Array((pruned + 1)...current), "origins \(origins), log after \(pruned) through \(current)")
        let kept = try store.read { db in try TransactionOrigins(db).origins(of: (pruned + 1)...current) }
        #expect(kept.count == origins.count && kept.values.allSatisfy { $0.device == "other-device" })
    }
}
