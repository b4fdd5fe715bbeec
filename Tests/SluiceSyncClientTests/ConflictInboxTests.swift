import Foundation
import SluiceDemo
@testable import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// The inbox's table on its own: records round-trip with their storage classes, retention
/// drops by age and by count, and restoring or dismissing an id it does not hold is an error
/// that changes nothing.
@Suite(.timeLimit(.minutes(10))) struct ConflictInboxTests {
    static let server = URL(string: "http://127.0.0.1:9")!  // never reached

    func store() throws -> (TemporaryDatabase, Store) {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: DemoSchema.migrations)
        _ = try SyncClient(store: store, server: Self.server, token: "t", configuration: SyncConfiguration(tables: DemoSchema.syncedTables))
        return (database, store)
    }

    func record(_ value: SQLiteValue, at date: Date) -> SyncConflict {
        SyncConflict(table: "person", rowID: 1, globalID: "g1", column: "city", kind: .column, rule: .lastWriterWins,
                     kept: .init(value: .text("kept"), device: "b", clock: HybridClock(rawValue: 2 << 16)),
                     lost: .init(value: value, device: "a", clock: HybridClock(rawValue: 1 << 16)),
                     row: ["blob": .blob(Data([0, 1])), "real": .real(1.5)], seq: 7, detail: nil, date: date)
    }

    @Test func recordsKeepTheirValuesAndStorageClasses() throws {
        let (_, store) = try store()
        let date = Date(timeIntervalSince1970: 1_800_000_000.25)
        for value: SQLiteValue in [.integer(42), .real(4.5), .text("42"), .blob(Data([0xFF, 0])), .null] {
            try store.write { db in try ConflictInbox(db).record(record(value, at: date), retention: .forever) }
        }
        let read = try SyncClient.conflicts(in: store)
        #expect(read.map(\.lost.value) == [.integer(42), .real(4.5), .text("42"), .blob(Data([0xFF, 0])), .null])
        #expect(read.allSatisfy { $0.kept == .init(value: .text("kept"), device: "b", clock: HybridClock(rawValue: 2 << 16)) && $0.seq == 7 })
        #expect(read.first?.row == ["blob": .blob(Data([0, 1])), "real": .real(1.5)])
        #expect(read.first.map { abs($0.date.timeIntervalSince(date)) < 0.001 } == true)
        // The JSON form types the values as the protocol does.
        let encoded = try JSONEncoder().encode(read[0])
        #expect(try JSONDecoder().decode(SyncConflict.self, from: encoded) == read[0])
    }

    @Test func retentionDropsByAgeAndByCount() throws {
        let (_, store) = try store()
        let now = Date()
        try store.write { db in
            let inbox = ConflictInbox(db)
            try inbox.record(record(.integer(1), at: now.addingTimeInterval(-3 * 24 * 3600)), retention: .forever)
            try inbox.record(record(.integer(2), at: now.addingTimeInterval(-3600)), retention: .forever)
            // Two days: the first goes.
            try inbox.record(record(.integer(3), at: now), retention: ConflictRetention(maxAge: 2 * 24 * 3600, maxCount: nil))
        }
        #expect(try SyncClient.conflicts(in: store).map(\.lost.value) == [.integer(2), .integer(3)])
        try store.write { db in try ConflictInbox(db).record(record(.integer(4), at: now), retention: ConflictRetention(maxAge: nil, maxCount: 2)) }
        #expect(try SyncClient.conflicts(in: store).map(\.lost.value) == [.integer(3), .integer(4)])
    }

    @Test func anIdTheInboxDoesNotHoldIsAnErrorAndChangesNothing() throws {
        let (database, store) = try store()
        try store.write { db in try ConflictInbox(db).record(record(.integer(1), at: Date()), retention: .forever) }
        let before = try PlainConnection(path: database.path).rows("SELECT * FROM sluice_live_sync_conflict")
        for attempt in [{ try SyncClient.restoreConflict(99, in: store, configuration: SyncConfiguration(tables: DemoSchema.syncedTables)) },
                        { try SyncClient.dismissConflict(99, in: store) }] {
            let error = #expect(throws: StoreError.self) { try attempt() }
            #expect(error?.code == .notFound && error?.message.contains("no conflict record 99") == true)
        }
        #expect(try PlainConnection(path: database.path).rows("SELECT * FROM sluice_live_sync_conflict") == before)
    }
}
