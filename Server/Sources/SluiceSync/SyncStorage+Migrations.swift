import Foundation
import Logging
import PostgresNIO

/// The service's PostgreSQL schema, evolved by numbered migrations: each runs once, in a
/// transaction of its own, and is recorded in `sluice_schema_version` (its version, name
/// and when). `prepare()` applies the pending ones under an advisory lock, so instances
/// starting at once apply each one once; a database migrated by a newer `sluice-sync` is
/// refused, never changed.
extension SyncStorage {
    /// A step of the schema.
    struct Migration: Sendable {
        var version: Int
        var name: String
        var statements: [String]
    }

    /// Every migration, in version order. Version 1 is the schema as it was before versions
    /// were counted (its statements say IF NOT EXISTS: a database made then takes it as is).
    static let migrations: [Migration] = [
        Migration(version: 1, name: "baseline", statements: baseline),
        // Members removed from a space, by name: their JWTs open it no more until it is
        // shared with them again (see SyncStorage+Members.swift).
        Migration(version: 2, name: "removed_members", statements: [
            """
            CREATE TABLE IF NOT EXISTS sluice_removed_member (
                space_id BIGINT NOT NULL REFERENCES sluice_space (id), name TEXT NOT NULL,
                removed_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (space_id, name))
            """,
        ]),
        // A space's rows are written by its pushes alone, whose space is the caller's (a row
        // of `sluice_space`, which nothing deletes): the foreign key's check was a trigger per
        // row folded, 25 ms of the 210 ms PostgreSQL took to fold a 10,000-row part.
        Migration(version: 3, name: "rows_without_space_check", statements: [
            "ALTER TABLE sluice_row DROP CONSTRAINT IF EXISTS sluice_row_space_id_fkey",
        ]),
        // Each device's largest number pushed, kept by the fold of each of its transactions:
        // a push's claim of its device row reads it in the same round trip (see
        // SyncStorage+PushStorage.swift), where `max(local)` of `sluice_txn` took one of its own.
        Migration(version: 4, name: "device_last_local", statements: [
            "ALTER TABLE sluice_device ADD COLUMN IF NOT EXISTS last_local BIGINT",
            """
            UPDATE sluice_device AS d SET last_local = t.last
            FROM (SELECT space_id, device, max(local) AS last FROM sluice_txn GROUP BY space_id, device) AS t
            WHERE d.space_id = t.space_id AND d.device = t.device
            """,
        ]),
        // A transaction's changes, stored in the history as JSON text (1.5 MB for a part of
        // 10,000 rows of a first upload), compressed with LZ4 instead of PostgreSQL's pglz:
        // pglz took 11% of PostgreSQL's time during a first upload. Rows written before keep
        // their compression (both are read alike). A PostgreSQL without LZ4 (built without
        // it, or older than 14) keeps pglz.
        Migration(version: 5, name: "history_lz4", statements: [
            """
            DO $$ BEGIN
                EXECUTE 'ALTER TABLE sluice_txn ALTER COLUMN changes SET COMPRESSION lz4';
            EXCEPTION WHEN feature_not_supported OR syntax_error THEN NULL;
            END $$
            """,
        ]),
        // A row's values kept as the JSON text the fold reads them from (`json`), not parsed
        // into `jsonb`: building `jsonb` was 40% of PostgreSQL's time folding a part of a first
        // upload (a nested object per value), and a snapshot's rows are sent as stored. An
        // update merges in `jsonb` (``fold(_:seq:clock:space:connection:logger:recording:movingHead:)``).
        Migration(version: 6, name: "rows_as_json", statements: [
            "ALTER TABLE sluice_row ALTER COLUMN vals TYPE JSON USING vals::json",
        ]),
    ]

    /// A database migrated by a newer version of the service.
    public struct SchemaTooNew: Error, CustomStringConvertible {
        /// The database's newest migration, and the newest this service knows.
        public let found: Int, known: Int
        public var description: String {
            "the database's schema is at version \(found), and this sluice-sync knows versions up to \(known): run a newer sluice-sync (nothing was changed)"
        }
    }

    /// Applies the pending migrations (safe to run from several instances at once).
    ///
    /// - Throws: ``SchemaTooNew`` when a newer service migrated the database; what
    ///   PostgreSQL reports when a migration fails (its transaction is rolled back).
    public func prepare() async throws {
        try await client.withConnection { connection in
            // One instance at a time migrates; the others wait for it.
            try await connection.query("SELECT pg_advisory_lock(727274)", logger: logger)
            do {
                try await migrate(connection)
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(727274)", logger: logger)
                throw error
            }
            try await connection.query("SELECT pg_advisory_unlock(727274)", logger: logger)
        }
    }

    /// The versions recorded in `sluice_schema_version`, oldest first.
    func appliedVersions(_ connection: PostgresConnection) async throws -> [Int] {
        var versions: [Int] = []
        for try await version in try await connection.query("SELECT version FROM sluice_schema_version ORDER BY version", logger: logger).decode(Int.self) {
            versions.append(version)
        }
        return versions
    }

    private func migrate(_ connection: PostgresConnection) async throws {
        try await connection.query("""
            CREATE TABLE IF NOT EXISTS sluice_schema_version (
                version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
            """, logger: logger)
        let applied = try await appliedVersions(connection)
        let known = Self.migrations.last?.version ?? 0
        if let found = applied.last, found > known { throw SchemaTooNew(found: found, known: known) }
        for migration in Self.migrations where !applied.contains(migration.version) {
            try await connection.query("BEGIN", logger: logger)
            do {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("""
                    INSERT INTO sluice_schema_version (version, name) VALUES (\(migration.version), \(migration.name))
                    """, logger: logger)
                try await connection.query("COMMIT", logger: logger)
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
        }
    }

    static let baseline = [
        """
        CREATE TABLE IF NOT EXISTS sluice_space (
            id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL UNIQUE, head BIGINT NOT NULL DEFAULT 0)
        """,
        """
        CREATE TABLE IF NOT EXISTS sluice_token (
            hash TEXT PRIMARY KEY, space_id BIGINT NOT NULL REFERENCES sluice_space (id),
            created_at TIMESTAMPTZ NOT NULL DEFAULT now(), revoked_at TIMESTAMPTZ)
        """,
        """
        CREATE TABLE IF NOT EXISTS sluice_txn (
            space_id BIGINT NOT NULL REFERENCES sluice_space (id), seq BIGINT NOT NULL,
            device TEXT NOT NULL, local BIGINT NOT NULL, clock BIGINT NOT NULL, changes TEXT NOT NULL,
            PRIMARY KEY (space_id, seq), UNIQUE (space_id, device, local))
        """,
        """
        CREATE TABLE IF NOT EXISTS sluice_row (
            space_id BIGINT NOT NULL REFERENCES sluice_space (id), tbl TEXT NOT NULL, id TEXT NOT NULL,
            vals JSONB NOT NULL, deleted BOOLEAN NOT NULL, seq BIGINT NOT NULL,
            PRIMARY KEY (space_id, tbl, id))
        """,
        """
        CREATE TABLE IF NOT EXISTS sluice_device (
            space_id BIGINT NOT NULL REFERENCES sluice_space (id), device TEXT NOT NULL, token_hash TEXT NOT NULL,
            PRIMARY KEY (space_id, device))
        """,
        // The clock a transaction was pushed with, when the service bounded it (`clock` is
        // then the bound): a retried push is recognized by what the device sent.
        "ALTER TABLE sluice_txn ADD COLUMN IF NOT EXISTS sent BIGINT",
        // Replays are found by clock (see ``push(_:space:token:policy:)``).
        "CREATE INDEX IF NOT EXISTS sluice_txn_clock ON sluice_txn (space_id, clock)",
        // Members and their roles (see SyncStorage+Members.swift); a token without a member
        // is its space's owner's (the tokens from before members were).
        """
        CREATE TABLE IF NOT EXISTS sluice_member (
            space_id BIGINT NOT NULL REFERENCES sluice_space (id), name TEXT NOT NULL, role TEXT NOT NULL,
            tables TEXT, PRIMARY KEY (space_id, name))
        """,
        "ALTER TABLE sluice_token ADD COLUMN IF NOT EXISTS member TEXT",
        // When each column of a row was last written (see SyncStorage+Fold.swift).
        "ALTER TABLE sluice_row ADD COLUMN IF NOT EXISTS clocks JSONB",
        // Compaction (see SyncStorage+Compaction.swift).
        "ALTER TABLE sluice_space ADD COLUMN IF NOT EXISTS pruned BIGINT NOT NULL DEFAULT 0",
        "ALTER TABLE sluice_device ADD COLUMN IF NOT EXISTS pulled BIGINT NOT NULL DEFAULT 0",
        "ALTER TABLE sluice_device ADD COLUMN IF NOT EXISTS seen_at TIMESTAMPTZ",
        // Attachments (see SyncStorage+Attachments.swift).
        """
        CREATE TABLE IF NOT EXISTS sluice_attachment (
            space_id BIGINT NOT NULL REFERENCES sluice_space (id), hash TEXT NOT NULL, size BIGINT NOT NULL,
            complete BOOLEAN NOT NULL DEFAULT false, touched_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (space_id, hash))
        """,
        """
        CREATE TABLE IF NOT EXISTS sluice_attachment_chunk (
            space_id BIGINT NOT NULL, hash TEXT NOT NULL, idx INTEGER NOT NULL, data BYTEA NOT NULL,
            PRIMARY KEY (space_id, hash, idx), FOREIGN KEY (space_id, hash) REFERENCES sluice_attachment ON DELETE CASCADE)
        """,
    ]
}
