import Foundation
import SluiceSyncClient

/// Deleting a parent row while another device edits its children: every copy ends with the
/// children the parent's ON DELETE action leaves (package.recipient_id CASCADE,
/// package.sender_id SET NULL, package_content.package_id CASCADE), whatever the order the
/// devices sync in and whether the deleting writer applied the action itself (the sqlite3
/// shell does not: foreign keys are off there).
extension SyncConformance {
    /// Packages as every copy must have them: `recipient>sender:contents` by first name, `-` for none.
    static func packageLines(_ device: Device) throws -> [String] {
        try device.rows("""
            SELECT coalesce(r.first_name, '?') || '>' || coalesce(s.first_name, '-') || ':' || count(c.id)
            FROM package k LEFT JOIN person r ON r.id = k.recipient_id LEFT JOIN person s ON s.id = k.sender_id
            LEFT JOIN package_content c ON c.package_id = k.id GROUP BY k.id ORDER BY 1
            """)
    }

    /// Two devices sharing Pia, Quinn and two packages: Quinn's from Pia (two contents) and
    /// Pia's from Quinn (one content).
    static func piaAndQuinn(_ service: any ConformanceService) async throws -> (Device, Device) {
        let (a, b) = try await devices(service)
        let pia = try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Pia', 'P')")
        let quinn = try a.sql("INSERT INTO person (first_name, last_name) VALUES ('Quinn', 'Q')")
        let toQuinn = try a.sql("INSERT INTO package (recipient_id, sender_id, created_at) VALUES (?, ?, '2026-11-24')", [.integer(quinn), .integer(pia)])
        let toPia = try a.sql("INSERT INTO package (recipient_id, sender_id, created_at) VALUES (?, ?, '2026-11-24')", [.integer(pia), .integer(quinn)])
        try a.sql("INSERT INTO package_content (package_id, title, weight, position) VALUES (?, 'a', 1, 0), (?, 'b', 1, 1), (?, 'c', 1, 0)",
                  [.integer(toQuinn), .integer(toQuinn), .integer(toPia)])
        try await a.client.sync()
        try await b.client.sync()
        try expect(try packageLines(b) == ["Pia>Quinn:1", "Quinn>Pia:2"], "b's packages: \(try packageLines(b))")
        return (a, b)
    }

    /// The shell deletes Pia (no cascade on A's file): Pia's package and its content go
    /// everywhere, Quinn's package loses its sender.
    static func aParentDeletedFromTheShellTakesItsChildrenEverywhere(_ service: any ConformanceService) async throws {
        do {
            let (a, b) = try await piaAndQuinn(service)
            try a.shell("DELETE FROM person WHERE first_name = 'Pia';")
            for device in [a, b, a] { try await device.client.sync() }
            for device in [a, b] {
                try expect(try packageLines(device) == ["Quinn>-:2"], "after the shell: \(try packageLines(device))")
            }
            try await expectAlike([a, b], service, "after the shell")
        }
    }

    /// A deletes Quinn; B, not knowing, names Quinn the sender of the package Quinn receives
    /// and the recipient of Pia's package: both go with Quinn.
    public static func aParentDeletedWhileAnotherDeviceReferencesItAgain(_ service: any ConformanceService, deleterFirst: Bool) async throws {
        do {
            let (a, b) = try await piaAndQuinn(service)
            try a.sql("DELETE FROM person WHERE first_name = 'Quinn'")
            try b.sql("UPDATE package SET sender_id = (SELECT id FROM person WHERE first_name = 'Quinn') WHERE recipient_id = (SELECT id FROM person WHERE first_name = 'Quinn')")
            try b.sql("""
                UPDATE package SET recipient_id = (SELECT id FROM person WHERE first_name = 'Quinn'), sender_id = NULL
                WHERE recipient_id = (SELECT id FROM person WHERE first_name = 'Pia')
                """)
            for device in deleterFirst ? [a, b, a, b] : [b, a, b, a] { try await device.client.sync() }
            for device in [a, b] {
                let state = (try packageLines(device), try device.rows("SELECT first_name FROM person"), try device.rows("SELECT count(*) FROM package_content"))
                try expect(state.0 == [] && state.1 == ["Pia"] && state.2 == ["0"], "\(deleterFirst ? "deleter first" : "editor first"): \(state)")
            }
            try await expectAlike([a, b], service, deleterFirst ? "deleter first" : "editor first")
        }
    }

    /// A deletes Pia; B names Pia the sender of both packages: SET NULL where Pia is the
    /// sender, and the package Pia receives goes with her.
    static func aSenderDeletedWhileAnotherDeviceNamesItBecomesNull(_ service: any ConformanceService) async throws {
        do {
            let (a, b) = try await piaAndQuinn(service)
            try a.sql("DELETE FROM person WHERE first_name = 'Pia'")
            try b.sql("UPDATE package SET sender_id = (SELECT id FROM person WHERE first_name = 'Pia')")
            for device in [b, a, b] { try await device.client.sync() }
            for device in [a, b] {
                try expect(try packageLines(device) == ["Quinn>-:2"], "the sender deleted: \(try packageLines(device))")
            }
            try await expectAlike([a, b], service, "the sender deleted")
        }
    }

    /// B deletes P offline while A files packages with P as sender (SET NULL) and as
    /// recipient (CASCADE); A syncs first.
    static func referencesToARowDeletedElsewhere(_ service: any ConformanceService) async throws {
        let (a, b) = try await devices(service)
        let p = try a.sql("INSERT INTO person (first_name, last_name) VALUES ('P', 'P')")
        let r = try a.sql("INSERT INTO person (first_name, last_name) VALUES ('R', 'R')")
        try await a.client.sync()
        try await b.client.sync()
        try b.sql("DELETE FROM person WHERE first_name = 'P'")
        try a.sql("INSERT INTO package (recipient_id, sender_id, created_at) VALUES (?, ?, 'sent by P')", [.integer(r), .integer(p)])
        try a.sql("INSERT INTO package (recipient_id, sender_id, created_at) VALUES (?, ?, 'for P')", [.integer(p), .integer(r)])
        for device in [a, b, a] { try await device.client.sync() }
        let packages = try a.rows("SELECT created_at, sender_id IS NULL FROM package")
        try expect(packages == ["sent by P|1"], "a's packages: \(packages)")
        try await expectAlike([a, b], service, "after P was deleted elsewhere")
    }
}
