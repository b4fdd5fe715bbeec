import Foundation
import Sluice
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport

/// Scenarios of the client's sync loop that every service must pass the same way: the real
/// service over HTTP and ``HistoryService`` in memory run the same ones, so the in-memory
/// service the client's tests use cannot drift from the real thing unnoticed. Each throws
/// ``ConformanceFailure`` naming what differed.
public enum SyncConformance {
    public typealias Scenario = @Sendable (any ConformanceService) async throws -> Void

    /// The service a scenario runs on: both services are set up so.
    public enum Setup: Sendable, Hashable {
        /// The demo app's schema (as `sluice-sync serve --demo`), the default limits.
        case demo
        /// ``Photos``' schema: `photo.image` is an attachment.
        case photos
        /// ``Versions``: devices of two app versions share the space.
        case versions
        /// The demo app's schema registered without the tables' statements and with a
        /// column the devices do not have (``schemaWithoutStatements()``).
        case withoutStatements
        /// The demo app's schema with limits on one push (`--max-push-transactions`,
        /// `--max-body-bytes`).
        case limits(pushTransactions: Int, bodyBytes: Int)
    }

    /// Every scenario, by name, with the service it runs on.
    public static let scenarios: [(name: String, setup: Setup, run: Scenario)] =
        (demoScenarios + conflictInboxScenarios + undoScenarios).map { ($0.name, .demo, $0.run) } + attachmentScenarios.map { ($0.name, .photos, $0.run) }
        + versionScenarios.map { ($0.name, .versions, $0.run) } + quarantineScenarios.map { ($0.name, .withoutStatements, $0.run) } + limitScenarios

    /// The scenarios on the demo app's schema, by name.
    static let demoScenarios: [(name: String, run: Scenario)] = [
        ("two devices converge: inserts, an update, a delete", twoDevicesConverge),
        ("rows and their references reach another device whose local ids differ", rowsAndReferencesReachAnotherDevice),
        ("a page of pulled transactions is one changeset; an overwritten unpushed edit is rebased and wins", pulledPagesAreOneChangesetEach),
        ("each column follows its policy: last writer, service wins, device wins, merge", eachColumnFollowsItsPolicy),
        ("a row deleted and inserted again with the same id syncs, in one sync and across syncs", aRowDeletedAndInsertedAgainSyncs),
        ("pushes that do not fit the schema are refused naming what, and append nothing", pushesThatDoNotFitTheSchemaAreRefused),
        ("an edit is stamped when it is committed, not when it syncs: the later writer wins", anEditIsStampedWhenCommitted),
        ("pushes on one base are sequenced unless they write the same columns (or delete a row written since)", pushesOnOneBaseAreSequencedUnlessTheyWriteTheSameColumns),
        ("column names are stored as the schema spells them; one written twice is refused", columnNamesAreStoredAsTheSchemaSpellsThem),
        ("a push on an old base that writes what came since is sent back; the device pulls, settles, pushes again", behindPullsThenPushesAgain),
        ("a push whose answer is lost after the service stored it is sent again as it was, and stored once", lostAnswerIsStoredOnce),
        ("a push that never reached the service is sent by the next sync", pushThatNeverArrivedIsSentAgain),
        ("an id another token holds: the device takes a new one and pushes under it", identityConflictTakesANewID),
        ("a copied store file becomes a device of its own and keeps the edits of both copies", aCopiedStoreFileKeepsTheEditsOfBothCopies),
        ("a store claiming another device's id is reidentified and loses nothing", aStoreClaimingAnotherDevicesIDIsReidentified),
        ("a viewer reads and its pushes are refused exactly; its changes stay queued", aViewerReadsAndItsPushesAreRefusedExactly),
        ("an editor writes only its tables, and only owners share", anEditorWritesOnlyItsTablesAndOnlyOwnersShare),
        ("a token the service never made opens nothing", anUnknownTokenOpensNothing),
        ("a new device after compaction starts from a snapshot and equals one that replayed everything", aNewDeviceFromASnapshotEqualsOneThatReplayedEverything),
        ("a snapshot cut midway leaves the device as it was; the next sync takes it whole, as one local transaction", aSnapshotCutMidwayLeavesTheDeviceAsItWas),
        ("a snapshot sends each row once; a parent written during it comes with its children", aSnapshotSendsEachRowOnce),
        ("a snapshot's and a subscription's rows arrive exactly as written, by type", snapshotRowsArriveExactlyAsWritten),
        ("a new device starts from a snapshot; against a service with none (404) it replays the history", aNewDeviceStartsFromASnapshotOrReplaysWhereThereIsNone),
        ("the history is pruned to what active devices hold; a device gone longer starts over and keeps its edits", historyIsPrunedToWhatActiveDevicesHave),
        ("one column edited on two devices: the later edit wins everywhere, whichever syncs first", laterEditWinsEitherOrder),
        ("two columns of one row edited on two devices: both edits stay", differentColumnsBothStay),
        ("an edit against a delete: the delete wins by default, whichever syncs first", deleteWinsEitherOrder),
        ("an edit against a delete with updateWins: the row comes back with the edit", updateWinsBringsTheRowBack),
        ("raw pushes: a retry is skipped, a replay and a copy's numbers refused, a commuting push appended, a conflicting one sent back", rawPushRules),
        ("a clock an hour ahead is stored as the service's, the device's kept as sent, and the device knows its own", clockAheadIsClamped),
        ("a parent deleted by the shell (no foreign keys) or while another device gives it a child: the service's ON DELETE action removes its children everywhere", parentsDeletedLeaveNoChildren),
        ("a row a CHECK constraint refuses, inserted or updated into, is refused by the service", checkConstraintsAreTheServicesToo),
        ("a parent deleted from the shell takes its children everywhere (CASCADE, SET NULL)", aParentDeletedFromTheShellTakesItsChildrenEverywhere),
        ("a parent deleted while another device points rows at it again, the deleter first", { try await aParentDeletedWhileAnotherDeviceReferencesItAgain($0, deleterFirst: true) }),
        ("a parent deleted while another device points rows at it again, the editor first", { try await aParentDeletedWhileAnotherDeviceReferencesItAgain($0, deleterFirst: false) }),
        ("a sender deleted while another device names it becomes NULL everywhere", aSenderDeletedWhileAnotherDeviceNamesItBecomesNull),
        ("a row on a freed rowid, here or after a delete elsewhere, is another row everywhere", aRowOnAFreedRowidIsAnotherRow),
        ("a push whose answer was lost, built again, names the same rows", aPushBuiltAgainNamesTheSameRows),
        ("a replaced row stays one row and keeps what points at it; a delete here wins over a replace elsewhere", aReplacedRowStaysOneRow),
        ("a round of rows sends the values of kept rows and the rows they point at, no other", aRoundSendsNoRowsOutsideTheSubscriptions),
        ("rows entering and leaving a subset device's subscriptions arrive and go as changesets", rowsEnterAndLeaveAsChangesets),
        ("each device builds its own full-text index from pulled rows; nothing logs, pushes or stores it", eachDeviceBuildsItsOwnFullTextIndex),
        ("packages filed naming a person deleted elsewhere end as the references' ON DELETE actions leave them", referencesToARowDeletedElsewhere),
        ("a device syncing one table, and a subset device changing its subscriptions, hold exactly what the service's rows give", subscriptionsChangeAtRunTime),
        ("subscriptions the service cannot keep exactly, and a hostile page position, are refused naming why", subscriptionsTheServiceCannotKeepAreRefused),
    ] + convergenceSeeds.map { seed in
        ("random offline edits on three devices converge, live lists exact, each device replaying the history (seed \(seed))", { service in
            try await randomOfflineEdits(service, seed: seed) { $0.startsFromSnapshot = false }
        })
    } + snapshotSeeds.map { seed in
        // Seed 11 found a row pulled onto the rowid of a row made here after this device deleted the pulled one.
        ("the same, each device starting from a snapshot of the rows (seed \(seed))", { service in
            try await randomOfflineEdits(service, seed: seed) { $0.startsFromSnapshot = true }
        })
    } + breakingSeeds.map { seed in
        ("devices converge through a copied file, shell deletes, a clock hours ahead and capitals (seed \(seed))", { service in
            try await convergeThroughCopiesShellDeletesAndSkewedClocks(service, seed: seed)
        })
    } + subsetSeeds.map { seed in
        ("random edits and subscription changes: a subset device holds exactly what its subscriptions keep (seed \(seed))", { service in
            try await subsetsConvergeWhileSubscriptionsChange(service, seed: seed)
        })
    }

    /// A device: a demo store on a file of its own and a client through a faulty transport.
    public final class Device: @unchecked Sendable {
        // @unchecked Sendable: used by one scenario at a time.
        public let database = TemporaryDatabase()
        /// The store's file: its own in ``database``, unless made on another.
        public let path: String
        public let store: Store
        public let client: SyncClient
        public let transport: FaultyTransport

        /// A device of the demo app, or of an app with more `migrations` and synced `tables`
        /// (of schema version `schemaVersion`), on a file of its own or the one at `path`.
        public init(_ service: any ConformanceService, token: String, path: String? = nil, migrations: [Migration] = DemoSchema.migrations,
                    tables: [String] = DemoSchema.syncedTables, schemaVersion: Int? = nil,
                    _ configure: (inout SyncConfiguration) -> Void = { _ in }) throws {
            self.path = path ?? database.path
            store = try Store(path: self.path)
            try store.migrate(migrations)
            transport = FaultyTransport(service.transport(token: token, schemaVersion: schemaVersion))
            var configuration = SyncConfiguration(tables: tables)
            configure(&configuration)
            client = try SyncClient(store: store, transport: transport, configuration: configuration)
        }

        /// Runs `sql` in a write of the store; the last inserted rowid.
        @discardableResult
        public func sql(_ sql: String, _ arguments: [SQLiteValue] = []) throws -> Int64 {
            try store.write { db in
                try db.execute(sql: sql, arguments: arguments)
                return db.lastInsertedRowID
            }
        }

        /// The rows `sql` reads, each as its values joined by `|`.
        public func rows(_ sql: String) throws -> [String] {
            try store.read { db in try db.fetchRows(sql: sql).map { $0.values.map { "\($0)" }.joined(separator: "|") } }
        }

        /// The synced tables as every device and the service must agree on them.
        public func content() throws -> [String] { try SyncContent.of(store) }

        /// Runs `sql` in the `sqlite3` shell on the store's file (foreign keys off there).
        public func shell(_ sql: String) throws { try SQLiteShell.run(path: path, sql) }

        /// The people here, `first last city`, sorted.
        public func people() throws -> [String] {
            try store.read { db in
                try db.fetchRows(sql: "SELECT first_name, last_name, coalesce(city, '-') FROM person").map { row in
                    row.values.map { "\($0)" }.joined(separator: " ")
                }
            }.sorted()
        }
    }

    static func devices(_ service: any ConformanceService, _ configure: (inout SyncConfiguration) -> Void = { _ in }) async throws -> (Device, Device) {
        (try Device(service, token: try await service.newToken(), configure), try Device(service, token: try await service.newToken(), configure))
    }

    /// Two devices that both have `first` Berg (age 30), synced. (A scenario that makes
    /// several pairs shares one space: each pair names its own row.)
    static func devicesSharingARow(_ service: any ConformanceService, first: String = "Ann",
                                   _ configure: (inout SyncConfiguration) -> Void = { _ in }) async throws -> (Device, Device) {
        let (a, b) = try await devices(service, configure)
        try a.sql("INSERT INTO person (first_name, last_name, age) VALUES ('\(first)', 'Berg', 30)")
        try await a.client.sync()
        try await b.client.sync()
        return (a, b)
    }

    /// The people here with their ages, `first last city age`, sorted.
    static func peopleWithAges(_ device: Device) throws -> [String] {
        try device.store.read { db in
            try db.fetchRows(sql: "SELECT first_name, last_name, coalesce(city, '-'), coalesce(age, '-') FROM person").map { row in
                row.values.map { "\($0)" }.joined(separator: " ")
            }
        }.sorted()
    }

    /// Syncs both until neither has anything pending (twice each is enough here).
    static func settle(_ a: Device, _ b: Device) async throws {
        for _ in 0..<2 {
            try await a.client.sync()
            try await b.client.sync()
        }
    }

    static func laterEditWinsEitherOrder(_ service: any ConformanceService) async throws {
        for (laterSyncsFirst, name) in [(false, "Ann"), (true, "Eva")] {
            let (a, b) = try await devicesSharingARow(service, first: name)
            try a.sql("UPDATE person SET city = 'Oslo' WHERE first_name = '\(name)'")
            try b.sql("UPDATE person SET city = 'Bergen' WHERE first_name = '\(name)'")   // later
            if laterSyncsFirst { try await b.client.sync() }
            try await settle(a, b)
            for device in [a, b] {
                let row = try device.people().filter { $0.hasPrefix(name + " ") }
                try expect(row == ["\(name) Berg Bergen"], "later edit synced \(laterSyncsFirst ? "first" : "last"): \(row)")
            }
        }
    }

    static func differentColumnsBothStay(_ service: any ConformanceService) async throws {
        let (a, b) = try await devicesSharingARow(service)
        try a.sql("UPDATE person SET city = 'Oslo'")
        try b.sql("UPDATE person SET age = 31")
        try await settle(a, b)
        for device in [a, b] {
            try expect(try peopleWithAges(device) == ["Ann Berg Oslo 31"], "\(try peopleWithAges(device))")
        }
    }

    static func deleteWinsEitherOrder(_ service: any ConformanceService) async throws {
        for (deleteSyncsFirst, name) in [(true, "Ann"), (false, "Eva")] {
            let (a, b) = try await devicesSharingARow(service, first: name)
            try a.sql("DELETE FROM person WHERE first_name = '\(name)'")
            try b.sql("UPDATE person SET city = 'Bergen' WHERE first_name = '\(name)'")
            if deleteSyncsFirst { try await a.client.sync() } else { try await b.client.sync() }
            try await settle(a, b)
            for device in [a, b] {
                let row = try device.people().filter { $0.hasPrefix(name + " ") }
                try expect(row == [], "delete synced \(deleteSyncsFirst ? "first" : "last"): \(row)")
            }
        }
    }

    static func updateWinsBringsTheRowBack(_ service: any ConformanceService) async throws {
        let (a, b) = try await devicesSharingARow(service) { $0.deleteRule = .updateWins }
        try a.sql("DELETE FROM person")
        try b.sql("UPDATE person SET city = 'Bergen'")
        try await a.client.sync()
        try await settle(a, b)
        for device in [a, b] {
            try expect(try device.people() == ["Ann Berg Bergen"], "\(try device.people())")
        }
    }

    static func twoDevicesConverge(_ service: any ConformanceService) async throws {
        let (a, b) = try await devices(service)
        try a.sql("INSERT INTO person (first_name, last_name, city) VALUES ('Ann', 'Berg', 'Oslo'), ('Bo', 'Lund', 'Bergen')")
        try await a.client.sync()
        try await b.client.sync()
        try expect(try b.people() == ["Ann Berg Oslo", "Bo Lund Bergen"], "b after its first sync: \(try b.people())")
        try b.sql("UPDATE person SET city = 'Trondheim' WHERE first_name = 'Ann'")
        try b.sql("DELETE FROM person WHERE first_name = 'Bo'")
        let pushed = try await b.client.sync()
        try expect(pushed.pushed == 2, "b pushed \(pushed.pushed) transactions, not 2")
        let pulled = try await a.client.sync()
        try expect(pulled.pulled == 2, "a pulled \(pulled.pulled) transactions, not 2")
        try expect(try a.people() == ["Ann Berg Trondheim"] && b.people() == ["Ann Berg Trondheim"], "a: \(try a.people()), b: \(try b.people())")
        let pending = (try await a.client.pendingChangeCount(), try await b.client.pendingChangeCount())
        try expect(pending == (0, 0), "still pending: \(pending)")
    }

    static func behindPullsThenPushesAgain(_ service: any ConformanceService) async throws {
        let (a, b) = try await devices(service)
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ann', 'Berg')")
        try await a.client.sync()
        try await b.client.sync()
        // Both change one column while apart; b's edit is the later one, a syncs first.
        try a.sql("UPDATE person SET city = 'Oslo'")
        try b.sql("UPDATE person SET city = 'Bergen'")
        try await a.client.sync()
        let report = try await b.client.sync()
        try expect(report.behind >= 1, "b's push was not sent back: \(b.transport.calls)")
        try expect(report.pushed == 1 && report.pulled >= 1, "b pushed \(report.pushed), pulled \(report.pulled)")
        try await a.client.sync()
        try expect(try a.people() == ["Ann Berg Bergen"] && b.people() == ["Ann Berg Bergen"], "the later edit wins everywhere: a \(try a.people()), b \(try b.people())")
    }

    static func lostAnswerIsStoredOnce(_ service: any ConformanceService) async throws {
        let (a, _) = try await devices(service)
        try await a.client.sync()
        let before = try await service.head()
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ann', 'Berg')")
        a.transport.failNextPush(.afterStoring)
        do {
            try await a.client.sync()
            throw ConformanceFailure("the sync whose answer was lost succeeded")
        } catch SyncClientError.offline {}
        try expect(try await service.head() == before + 1, "the push was not stored")
        try expect(try await a.client.pendingChangeCount() == 1, "the unanswered push is no longer pending")
        try await a.client.sync()
        let pushes = a.transport.calls.filter { $0.hasPrefix("push") }.suffix(2)
        try expect(Set(pushes).count == 1, "the retry is not the same push: \(pushes)")
        let after = try await service.head()
        try expect(after == before + 1, "stored twice: the head is \(after), was \(before)")
        try expect(try a.people() == ["Ann Berg -"], "\(try a.people())")
        try expect(try await a.client.pendingChangeCount() == 0, "still pending")
    }

    static func pushThatNeverArrivedIsSentAgain(_ service: any ConformanceService) async throws {
        let (a, _) = try await devices(service)
        try await a.client.sync()
        let before = try await service.head()
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ann', 'Berg')")
        a.transport.failNextPush(.beforeStoring)
        do {
            try await a.client.sync()
            throw ConformanceFailure("the sync whose push never arrived succeeded")
        } catch SyncClientError.offline {}
        try expect(try await service.head() == before, "stored although it never arrived")
        try expect(try await a.client.pendingChangeCount() == 1, "lost")
        let report = try await a.client.sync()
        let after = try await service.head()
        try expect(report.pushed == 1 && after == before + 1, "pushed \(report.pushed), head \(before) → \(after)")
    }

    static func identityConflictTakesANewID(_ service: any ConformanceService) async throws {
        let (a, b) = try await devices(service)
        try await a.client.sync()
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ann', 'Berg')")
        try await a.client.sync()
        try await b.client.sync()
        // b claims a's id (a store copied with its sync state, or a forged one).
        let aID = try await a.client.deviceID
        try await b.store.write { db in
            try db.execute(sql: "UPDATE sluice_sync_state SET value = ? WHERE key = 'device'", arguments: [.text(aID)])
        }
        try b.sql("INSERT INTO person (first_name, last_name) VALUES ('Cy', 'Holm')")
        let report = try await b.client.sync()
        try expect(report.reidentified, "b kept the id: \(b.transport.calls)")
        try expect(try await b.client.deviceID != aID, "b still claims a's id")
        try await a.client.sync()
        try expect(try a.people() == ["Ann Berg -", "Cy Holm -"] && b.people() == ["Ann Berg -", "Cy Holm -"], "a \(try a.people()), b \(try b.people())")
    }

    static func rawPushRules(_ service: any ConformanceService) async throws {
        let first = service.transport(token: try await service.newToken())
        let second = service.transport(token: try await service.newToken())
        let clock = HybridClock(date: Date())
        func person(_ id: String, _ city: String) -> SyncChange {
            SyncChange(table: "person", id: id, op: .insert, values: ["first_name": .text("P"), "last_name": .text(id), "city": .text(city)])
        }
        func accepted(_ outcome: SyncPushOutcome, _ what: String) throws -> PushResponse {
            guard case .accepted(let response) = outcome else { throw ConformanceFailure("\(what): \(outcome)") }
            return response
        }
        let base = try await service.head()
        let x = "conformance-x-\(UUID().uuidString.prefix(8))"
        let one = SyncTransaction(device: x, local: 1, clock: clock, changes: [person("\(x)-1", "Oslo")])
        let pushed = try accepted(try await first.push(PushRequest(device: x, base: base, transactions: [one])), "the first push")
        try expect(pushed.appended == 1 && pushed.head == base + 1, "the first push: \(pushed)")
        // The same push again (its answer lost): skipped.
        let retried = try accepted(try await first.push(PushRequest(device: x, base: base, transactions: [one])), "a retry")
        try expect(retried.appended == 0, "a retry appended \(retried.appended)")
        // Another transaction under number 1: a copy of the store, refused.
        let copy = SyncTransaction(device: x, local: 1, clock: clock.tick(at: Date()), changes: [person("\(x)-2", "Bergen")])
        guard case .identityConflict = try await first.push(PushRequest(device: x, base: base + 1, transactions: [copy])) else {
            throw ConformanceFailure("a copy's number 1 was not refused as an identity conflict")
        }
        // The first device's transaction sent again by another device: a replay, refused.
        let y = "conformance-y-\(UUID().uuidString.prefix(8))"
        do {
            let outcome = try await second.push(PushRequest(device: y, base: base + 1, transactions: [SyncTransaction(device: y, local: 1, clock: clock, changes: one.changes)]))
            throw ConformanceFailure("a replay was taken: \(outcome)")
        } catch SyncClientError.rejected(_, let body) where body.code == .replay {}
        // On the old base: another row commutes (appended after), the same column does not.
        let other = SyncTransaction(device: y, local: 1, clock: clock.tick(at: Date()), changes: [person("\(y)-1", "Tromsø")])
        let commuting = try accepted(try await second.push(PushRequest(device: y, base: base, transactions: [other])), "a commuting push")
        try expect(commuting.appended == 1 && commuting.head == base + 2, "a commuting push: \(commuting)")
        let update = SyncChange(table: "person", id: "\(x)-1", op: .update, values: ["city": .text("Bodø")])
        let conflicting = SyncTransaction(device: y, local: 2, clock: clock.tick(at: Date()), changes: [update])
        guard case .behind = try await second.push(PushRequest(device: y, base: base, transactions: [conflicting])) else {
            throw ConformanceFailure("a push on an old base writing a row the history wrote since was not sent back")
        }
    }

    static func clockAheadIsClamped(_ service: any ConformanceService) async throws {
        let transport = service.transport(token: try await service.newToken())
        let device = "conformance-z-\(UUID().uuidString.prefix(8))"
        let ahead = HybridClock(date: Date().addingTimeInterval(3_600))
        let base = try await service.head()
        let change = SyncChange(table: "person", id: "\(device)-1", op: .insert, values: ["first_name": .text("Z"), "last_name": .text("Ahead")])
        let outcome = try await transport.push(PushRequest(device: device, base: base, transactions: [SyncTransaction(device: device, local: 1, clock: ahead, changes: [change])]))
        guard case .accepted(let response) = outcome else { throw ConformanceFailure("the push: \(outcome)") }
        try expect(response.clamped == 1, "clamped \(response.clamped.map(String.init) ?? "none")")
        let pulled = try await transport.pull(since: base).transactions.first { $0.device == device }
        try expect(pulled?.sent == ahead, "the device's clock is not kept as sent: \(String(describing: pulled?.sent))")
        try expect((pulled?.clock).map { $0 < ahead } == true, "stored with the device's clock")
    }

    static func expect(_ condition: Bool, _ message: @autoclosure () throws -> String) throws {
        if !condition { throw ConformanceFailure(try message()) }
    }
}

/// What a conformance scenario found different.
public struct ConformanceFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
