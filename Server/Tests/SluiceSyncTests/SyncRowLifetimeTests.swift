import Foundation
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// A rowid names one row at a time: a row deleted in one transaction and a row inserted on
/// its rowid in a later one are two rows everywhere (SQLite reuses the largest rowid), and a
/// row deleted and inserted again in one transaction (`INSERT OR REPLACE`) stays one row on
/// every device, without running a device's ON DELETE actions on its unpushed rows.
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncRowLifetimeTests {
    /// The service's people, as `first_name` by global id.
    static func people(_ space: SyncSpace) throws -> [String: String] {
        var people: [String: String] = [:]
        for line in try SyncRequests.storedRows(space, table: "person") {
            guard let id = line.split(separator: " ").first, let name = line.firstMatch(of: /first_name=\{"t": "([^"]*)"\}/)?.1 else { continue }
            people[String(id)] = String(name)
        }
        return people
    }

    /// A space whose two devices have Ana, synced.
    static func anaOnTwoDevices() async throws -> (SyncSpace, Device, Device) {
        let space = try SyncSpace()
        let a = try space.device()
        let b = try space.device()
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ana', 'A')")
        try await a.client.sync()
        try await b.client.sync()
        return (space, a, b)
    }

    @Test func aRowOnADeletedRowsRowidIsAnotherRow() async throws {
        let (space, a, b) = try await Self.anaOnTwoDevices()
        let ana = try #require(Self.people(space).first { $0.value == "Ana" }?.key)

        // Deleted in one sync, a new row on the same rowid in the next: the new row has its own id.
        try a.sql("DELETE FROM person WHERE first_name = 'Ana'")
        try await a.client.sync()
        let rowid = try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Bo', 'B')")
        #expect(rowid == 1, "SQLite gives the largest rowid again")
        try await a.client.sync()
        let after = try Self.people(space)
        #expect(after.count == 1 && after[ana] == nil && after.values.first == "Bo", "\(after)")

        // Both in one push (a device offline): the same.
        try a.sql("DELETE FROM person WHERE first_name = 'Bo'")
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Cy', 'C')")
        try await a.client.sync()
        let third = try Self.people(space)
        #expect(third.count == 1 && Set(third.keys).isDisjoint(with: after.keys) && third.values.first == "Cy", "\(third)")
        try await b.client.sync()
        #expect(try b.rows("SELECT first_name FROM person") == ["Cy"])
        #expect(try a.content() == b.content())
        #expect(try SyncContent.ofService(space.postgres) == a.content())
    }

    @Test func aRowOnTheRowidOfARowDeletedElsewhereIsAnotherRow() async throws {
        let (space, a, b) = try await Self.anaOnTwoDevices()
        try b.sql("DELETE FROM person")
        try await b.client.sync()
        // A pulls the delete, then makes a row that takes the freed rowid.
        try await a.client.sync()
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Bo', 'B')")
        try await a.client.sync()
        try await b.client.sync()
        #expect(try b.rows("SELECT first_name FROM person") == ["Bo"])
        #expect(try Self.people(space).count == 1)
        #expect(try SyncContent.ofService(space.postgres) == b.content())
    }

    @Test func aPushBuiltAgainNamesTheSameRows() async throws {
        let space = try SyncSpace()
        let proxy = try DroppingProxy(upstream: space.service.url)
        let a = try Device(server: proxy.url, token: space.token)
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Ana', 'A')")
        try await a.client.sync()
        try a.sql("DELETE FROM person")
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Bo', 'B')")
        // The push is taken, its answer lost: sent again, it is recognized, not applied twice.
        proxy.dropNextResponses(1)
        await #expect(throws: SyncClientError.self) { try await a.client.sync() }
        try await a.client.sync()
        #expect(try await a.client.pendingChangeCount() == 0)
        let people = try Self.people(space)
        #expect(people.count == 1 && people.values.first == "Bo", "\(people)")
        #expect(try SyncContent.ofService(space.postgres) == a.content())
    }

    @Test func aReplacedRowStaysOneRowAndKeepsWhatPointsAtIt() async throws {
        let (space, a, b) = try await Self.anaOnTwoDevices()
        // B has a package not pushed yet from Ana; A replaces Ana's row (delete and insert, one transaction).
        try b.sql("INSERT INTO package (recipient_id, sender_id, created_at) VALUES (1, 1, '1')")
        try a.sql("INSERT OR REPLACE INTO person (id, first_name, last_name) VALUES (1, 'Ana', 'Again')")
        try await a.client.sync()
        try await b.client.sync()
        #expect(try b.rows("SELECT last_name FROM person") == ["Again"])
        #expect(try b.rows("SELECT recipient_id, sender_id FROM package") == ["1|1"], "the replace did not take B's package with it")
        try await a.client.sync()
        #expect(try a.content() == b.content())
        #expect(try SyncContent.ofService(space.postgres) == a.content())
    }

    @Test func aDeleteHereWinsOverAReplaceElsewhereAndTheRowOnItsRowidStays() async throws {
        let (space, a, b) = try await Self.anaOnTwoDevices()
        // B replaces Ana (one transaction), pushed; A, offline, deletes Ana and makes Bo on her rowid.
        try b.sql("INSERT OR REPLACE INTO person (id, first_name, last_name) VALUES (1, 'Ana', 'Again')")
        try await b.client.sync()
        try a.sql("DELETE FROM person WHERE first_name = 'Ana'")
        #expect(try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Bo', 'B')") == 1)
        try await a.client.sync()
        try await b.client.sync()
        // The delete wins (as over a concurrent update); Bo is a row of his own everywhere.
        #expect(try a.rows("SELECT first_name FROM person") == ["Bo"])
        #expect(try b.rows("SELECT first_name FROM person") == ["Bo"])
        #expect(try Self.people(space).values.sorted() == ["Bo"])
        #expect(try a.content() == b.content())
        #expect(try SyncContent.ofService(space.postgres) == a.content())
    }
}
