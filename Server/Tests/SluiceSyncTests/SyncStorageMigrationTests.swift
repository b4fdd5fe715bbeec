import Foundation
@testable import SluiceSync
import SluiceTestSupport
import Testing

/// The service's PostgreSQL schema evolves by numbered migrations: a fresh database gets
/// them all, a database written by the code before versions were counted is upgraded in
/// place with its data, and one migrated by a newer service is refused unchanged.
@Suite(.serialized, .timeLimit(.minutes(2)), .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncStorageMigrationTests {
    static let tool = CommandRunner.executable(named: "sluice-sync").path
    static var known: Int { SyncStorage.migrations.last?.version ?? 0 }

    static func versions(_ cluster: PostgresCluster, _ database: String) throws -> [String] {
        try cluster.psql(database, "SELECT version || ' ' || name FROM sluice_schema_version ORDER BY version")
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    @Test func aDatabaseOfThePreviousCodeIsUpgradedInPlace() throws {
        let cluster = try PostgresCluster.shared()
        let url = try cluster.makeDatabase()
        let database = String(URLComponents(string: url)?.path.dropFirst() ?? "")
        // As the code before numbered migrations left it: its statement list, and data.
        for statement in SyncStorage.baseline { _ = try cluster.psql(database, statement) }
        _ = try cluster.psql(database, """
            INSERT INTO sluice_space (name, head) VALUES ('old', 1);
            INSERT INTO sluice_txn (space_id, seq, device, local, clock, changes) SELECT id, 1, 'd', 1, 1, '[]' FROM sluice_space;
            """)
        let token = try PostgresCluster.run(Self.tool, ["token", "add", "--postgres", url, "--space", "old"])
        #expect(token.contains("slt_"), "\(token)")
        #expect(try Self.versions(cluster, database) == SyncStorage.migrations.map { "\($0.version) \($0.name)" })
        #expect(try cluster.psql(database, "SELECT count(*) FROM sluice_txn").trimmingCharacters(in: .whitespacesAndNewlines) == "1", "the history is kept")
        #expect(try cluster.psql(database, "SELECT count(*) FROM sluice_removed_member").trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        // Run again: nothing to do.
        _ = try PostgresCluster.run(Self.tool, ["token", "add", "--postgres", url, "--space", "old"])
        #expect(try Self.versions(cluster, database).count == Self.known)
    }

    @Test func aDatabaseOfEachEarlierVersionIsUpgradedInPlace() throws {
        let cluster = try PostgresCluster.shared()
        for version in 1..<Self.known {
            let url = try cluster.makeDatabase()
            let database = String(URLComponents(string: url)?.path.dropFirst() ?? "")
            // As the service at `version` left it: its migrations recorded, a space, a
            // transaction and its row.
            _ = try cluster.psql(database, """
                CREATE TABLE sluice_schema_version (
                    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
                """)
            for migration in SyncStorage.migrations where migration.version <= version {
                for statement in migration.statements { _ = try cluster.psql(database, statement) }
                _ = try cluster.psql(database, "INSERT INTO sluice_schema_version (version, name) VALUES (\(migration.version), '\(migration.name)')")
            }
            _ = try cluster.psql(database, """
                INSERT INTO sluice_space (name, head) VALUES ('old', 1);
                INSERT INTO sluice_txn (space_id, seq, device, local, clock, changes)
                    SELECT id, 1, 'd', 1, 1, '[{"table":"person","id":"p","op":"insert","values":{"age":{"i":7}}}]' FROM sluice_space;
                INSERT INTO sluice_row (space_id, tbl, id, vals, deleted, seq) SELECT id, 'person', 'p', '{"age":{"i":7}}', false, 1 FROM sluice_space;
                INSERT INTO sluice_device (space_id, device, token_hash) SELECT id, 'd', 'h' FROM sluice_space;
                """)
            // From version 4 on, the fold keeps the device's last number in its row.
            if version >= 4 { _ = try cluster.psql(database, "UPDATE sluice_device SET last_local = 1") }
            _ = try PostgresCluster.run(Self.tool, ["token", "add", "--postgres", url, "--space", "old"])
            #expect(try Self.versions(cluster, database) == SyncStorage.migrations.map { "\($0.version) \($0.name)" }, "from version \(version)")
            let kept = try cluster.psql(database, "SELECT count(*) FROM sluice_txn") + cluster.psql(database, "SELECT vals::text FROM sluice_row")
            #expect(kept.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) } == ["1", #"{"age": {"i": 7}}"#], "from version \(version): \(kept)")
            // Version 3: rows are written without the space's foreign key check.
            let keys = try cluster.psql(database, "SELECT count(*) FROM pg_constraint WHERE conname = 'sluice_row_space_id_fkey'")
            #expect(keys.trimmingCharacters(in: .whitespacesAndNewlines) == "0", "from version \(version)")
            // Version 4: each device's last number is kept in its row, from the history it pushed.
            let last = try cluster.psql(database, "SELECT last_local FROM sluice_device WHERE device = 'd'")
            #expect(last.trimmingCharacters(in: .whitespacesAndNewlines) == "1", "from version \(version): \(last)")
            // Version 5: the history's changes are compressed with LZ4 (this PostgreSQL has it).
            let compression = try cluster.psql(database, "SELECT attcompression FROM pg_attribute WHERE attrelid = 'sluice_txn'::regclass AND attname = 'changes'")
            #expect(compression.trimmingCharacters(in: .whitespacesAndNewlines) == "l", "from version \(version): \(compression)")
            // Version 6: a row's values are kept as JSON text (the row above reads as before).
            let type = try cluster.psql(database, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'sluice_row'::regclass AND attname = 'vals'")
            #expect(type.trimmingCharacters(in: .whitespacesAndNewlines) == "json", "from version \(version): \(type)")
        }
    }

    @Test func aDatabaseOfANewerServiceIsRefusedUnchanged() throws {
        let cluster = try PostgresCluster.shared()
        let url = try cluster.makeDatabase()
        let database = String(URLComponents(string: url)?.path.dropFirst() ?? "")
        _ = try PostgresCluster.run(Self.tool, ["token", "add", "--postgres", url, "--space", "s"])
        _ = try cluster.psql(database, "INSERT INTO sluice_schema_version (version, name) VALUES (\(Self.known + 97), 'from the future')")
        let before = try cluster.psql(database, "SELECT count(*) FROM sluice_token")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.tool)
        process.arguments = ["token", "add", "--postgres", url, "--space", "s"]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus != 0)
        #expect(message.contains("version \(Self.known + 97)") && message.contains("newer sluice-sync"), "\(message)")
        #expect(try cluster.psql(database, "SELECT count(*) FROM sluice_token") == before, "nothing changed")
    }
}
