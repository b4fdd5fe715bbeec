import Foundation
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// Deleting a parent row while another device edits its children: every copy ends with
/// the children the parent's ON DELETE action leaves (package.recipient_id CASCADE,
/// package.sender_id SET NULL, package_content.package_id CASCADE), whatever the order
/// the devices sync in, the instance each talks to, and whether the deleting writer
/// applied the action itself (the sqlite3 shell does not: foreign keys are off there).
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncDeleteRuleTests {
    /// Packages as every copy must have them: `recipient>sender` by first name, `-` for none.
    static func packages(_ device: Device) throws -> [String] {
        try device.rows("""
            SELECT coalesce(r.first_name, '?') || '>' || coalesce(s.first_name, '-') || ':' || count(c.id)
            FROM package k LEFT JOIN person r ON r.id = k.recipient_id LEFT JOIN person s ON s.id = k.sender_id
            LEFT JOIN package_content c ON c.package_id = k.id GROUP BY k.id ORDER BY 1
            """)
    }

    /// Two devices sharing Pia, Quinn and two packages: Quinn's from Pia (two contents) and
    /// Pia's from Quinn (one content).
    static func start(_ space: SyncSpace, second: SyncServiceProcess? = nil) async throws -> (Device, Device) {
        let a = try space.device()
        let b = try Device(server: (second ?? space.service).url, token: space.token)
        let pia = try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Pia', 'P')")
        let quinn = try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Quinn', 'Q')")
        let toQuinn = try a.sql("INSERT INTO package (recipient_id, sender_id, created_at) VALUES (?, ?, '2026-11-24')", [.integer(quinn), .integer(pia)])
        let toPia = try a.sql("INSERT INTO package (recipient_id, sender_id, created_at) VALUES (?, ?, '2026-11-24')", [.integer(pia), .integer(quinn)])
        try a.sql("INSERT INTO package_content (package_id, title, weight, position) VALUES (?, 'a', 1, 0), (?, 'b', 1, 1), (?, 'c', 1, 0)",
                  [.integer(toQuinn), .integer(toQuinn), .integer(toPia)])
        try await a.client.sync()
        try await b.client.sync()
        #expect(try packages(b) == ["Pia>Quinn:1", "Quinn>Pia:2"])
        return (a, b)
    }

    /// Through two service instances on one database (one service: SyncConformance's
    /// scenarios, with the shell's delete and a sender set to NULL, on both services).
    @Test(arguments: [false, true], [true])
    func aParentDeletedWhileAnotherDeviceReferencesItAgain(deleterFirst: Bool, twoInstances: Bool) async throws {
        let space = try SyncSpace()
        let second = try twoInstances ? SyncServiceProcess(postgres: space.postgres) : nil
        let (a, b) = try await Self.start(space, second: second)
        // A deletes Quinn. B, not knowing, names Quinn the sender of the package Quinn
        // receives, and makes Quinn the recipient of Pia's package (CASCADE when Quinn goes).
        try a.sql("DELETE FROM person WHERE first_name = 'Quinn'")
        try b.sql("UPDATE package SET sender_id = (SELECT id FROM person WHERE first_name = 'Quinn') WHERE recipient_id = (SELECT id FROM person WHERE first_name = 'Quinn')")
        try b.sql("""
            UPDATE package SET recipient_id = (SELECT id FROM person WHERE first_name = 'Quinn'), sender_id = NULL
            WHERE recipient_id = (SELECT id FROM person WHERE first_name = 'Pia')
            """)
        let order = deleterFirst ? [a, b, a, b] : [b, a, b, a]
        for device in order { try await device.client.sync() }
        // Quinn's package went with Quinn; Pia's package now pointed at Quinn, so it went too.
        for device in [a, b] {
            #expect(try Self.packages(device) == [], "\(deleterFirst ? "deleter first" : "editor first")")
            #expect(try device.rows("SELECT first_name FROM person") == ["Pia"])
            #expect(try device.rows("SELECT count(*) FROM package_content") == ["0"])
        }
        try await SyncFaultTests.converge([a, b], postgres: space.postgres)
        second?.stop()
    }
}
