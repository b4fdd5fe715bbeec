import Foundation
import SluiceDemo
@testable import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// A store that has never met the service counts its pending transactions from the log's
/// transaction rows alone; the count is the one reading every change gives.
@Suite(.timeLimit(.minutes(10))) struct PendingCountTests {
    @Test func aNewStoreCountsWhatItWillPushWithoutReadingChanges() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let engine = SyncEngine(configuration: SyncConfiguration(tables: DemoSchema.syncedTables))
        try SyncStateFormat.migrate(store)
        _ = try store.write { db in try engine.prepare(db) }
        // Three that change synced tables (one with an unsynced table too), one that changes
        // only an unsynced table, one whose author is sync's own. (A pulled row would have a
        // global id: the store would have met the service.)
        try store.write { db in try db.execute(sql: "INSERT INTO person (first_name, last_name) VALUES ('A', 'B')") }
        try store.write { db in
            try db.execute(sql: "UPDATE person SET age = 3")
            try db.execute(sql: "UPDATE app_state SET temperature_low = 14")
        }
        try store.write { db in try db.execute(sql: "UPDATE app_state SET temperature_low = 13") }
        try store.write { db in try db.execute(sql: "DELETE FROM person") }
        try store.write { db in
            db.transactionAuthor = SyncEngine.syncAuthor
            try db.execute(sql: "UPDATE app_state SET temperature_low = 12")
        }
        try store.read { db in
            let state = try #require(try engine.loadState(db))
            #expect(try !engine.hasMetService(state, db))
            #expect(try engine.pendingCount(db) == 3)
            #expect(try engine.unpushed(state, db).count == 3, "the count that reads every change")
        }
    }
}
