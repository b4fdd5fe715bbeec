import PostgresNIO

/// What the health and readiness checks ask PostgreSQL.
extension SyncStorage {
    /// Whether PostgreSQL answers (`SELECT 1` on a pooled connection).
    ///
    /// - Throws: the client's error when it does not.
    func ping() async throws {
        let rows = try await client.query("SELECT 1", logger: logger)
        for try await _ in rows.decode(Int.self) {}
    }

    /// Whether the service's tables are there to serve from (`prepare()` ran on this
    /// database): a read of the spaces' table.
    ///
    /// - Throws: the client's error when PostgreSQL does not answer or the table is missing.
    func checkTables() async throws {
        let rows = try await client.query("SELECT count(*) FROM (SELECT 1 FROM sluice_space LIMIT 1) AS s", logger: logger)
        for try await _ in rows.decode(Int64.self) {}
    }
}
