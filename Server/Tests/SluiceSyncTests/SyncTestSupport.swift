import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SluiceSyncConformance
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice

/// One sync space for a test: its own PostgreSQL database, a service, a token.
final class SyncSpace: @unchecked Sendable {
    // @unchecked Sendable: set up once, then only read.
    let postgres: String
    let service: SyncServiceProcess
    let token: String

    init(serviceArguments: [String] = []) throws {
        let cluster = try PostgresCluster.shared()
        postgres = try cluster.makeDatabase()
        token = try SyncServiceProcess.addToken(postgres: postgres, space: "test")
        service = try SyncServiceProcess(postgres: postgres, extraArguments: serviceArguments)
    }

    /// The name of the space's PostgreSQL database.
    var databaseName: String { String(URLComponents(string: postgres)?.path.dropFirst() ?? "") }

    /// Runs SQL on the space's database with psql; its output.
    func psql(_ sql: String) throws -> String { try PostgresCluster.shared().psql(databaseName, sql) }

    /// The last sequence of the space's history (0 when it is empty): the base of a raw push.
    func head() throws -> Int64 {
        Int64(try psql("SELECT coalesce(max(seq), 0) FROM sluice_txn").trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    /// Runs `sluice-sync compact` on the space: how far its history is pruned now.
    func compact(horizonDays: Int) throws -> Int64 {
        let output = try PostgresCluster.run(CommandRunner.executable(named: "sluice-sync").path,
                                             ["compact", "--postgres", postgres, "--space", "test", "--horizon-days", "\(horizonDays)"])
        guard let range = output.range(of: "pruned through "),
              let through = Int64(output[range.upperBound...].prefix { $0.isNumber }) else {
            throw ConformanceFailure("sluice-sync compact said: \(output)")
        }
        return through
    }

    /// A device: a fresh demo store and its client.
    func device(_ configure: (inout SyncConfiguration) -> Void = { _ in }) throws -> Device {
        try Device(server: service.url, token: token, configure)
    }
}

/// A device in a test: a demo store on its own file and a sync client.
final class Device: @unchecked Sendable {
    // @unchecked Sendable: used by one test task at a time.
    let database = TemporaryDatabase()
    let store: Store
    let client: SyncClient

    /// A device on a fresh file, or on the store at `path` (created when missing).
    init(path: String? = nil, server: URL, token: String, _ configure: (inout SyncConfiguration) -> Void = { _ in }) throws {
        store = try path.map { try Store(path: $0) } ?? database.store()
        try store.migrate(DemoSchema.migrations)
        var configuration = SyncConfiguration(tables: DemoSchema.syncedTables)
        configure(&configuration)
        client = try SyncClient(store: store, server: server, token: token, configuration: configuration)
    }

    @discardableResult
    func sql(_ sql: String, _ arguments: [SQLiteValue] = []) throws -> Int64 {
        try store.write { db in
            try db.execute(sql: sql, arguments: arguments)
            return db.lastInsertedRowID
        }
    }

    func rows(_ sql: String) throws -> [String] {
        try store.read { db in try db.fetchRows(sql: sql).map { $0.values.map { "\($0)" }.joined(separator: "|") } }
    }

    /// The synced tables as every device must agree on them (see ``SyncContent``).
    func content() throws -> [String] { try SyncContent.of(store) }
}

extension SyncContent {
    /// The service's folded row state (`sluice_row`, rows not deleted) of the database at `postgres`.
    static func ofService(_ postgres: String, cluster: PostgresCluster? = nil) throws -> [String] {
        guard let components = URLComponents(string: postgres) else { return [] }
        let database = String(components.path.dropFirst())
        let output = try (cluster ?? PostgresCluster.shared()).psql(database, "SELECT tbl || ' ' || id || ' ' || vals::text FROM sluice_row WHERE NOT deleted")
        var rows: [(table: String, id: String, values: [String: SyncValue])] = []
        for text in output.split(separator: "\n") {
            let parts = text.split(separator: " ", maxSplits: 2).map(String.init)
            guard parts.count == 3 else { continue }
            rows.append((parts[0], parts[1], try JSONDecoder().decode([String: SyncValue].self, from: Data(parts[2].utf8))))
        }
        return of(serviceRows: rows)
    }
}

/// Raw requests to a service, as a hostile or broken client sends them.
enum SyncRequests {
    static func push(_ push: PushRequest, to space: SyncSpace, token: String) async throws -> (Int, String) {
        try await post(JSONEncoder().encode(push), to: space, token: token)
    }

    static func post(_ body: Data, to space: SyncSpace, token: String?, path: String = "v1/push") async throws -> (Int, String) {
        var request = URLRequest(url: space.service.url.appendingPathComponent(path))
        request.httpMethod = "POST"
        request.httpBody = body
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    /// The service's stored rows of `table` as `id column=value` lines (JSON keys as stored).
    static func storedRows(_ space: SyncSpace, table: String) throws -> [String] {
        let output = try space.psql("""
            SELECT id || ' ' || (SELECT string_agg(key || '=' || value::text, ' ' ORDER BY key) FROM jsonb_each(vals::jsonb))
            FROM sluice_row WHERE tbl = '\(table)' AND NOT deleted ORDER BY id
            """)
        return output.split(separator: "\n").map(String.init)
    }
}
