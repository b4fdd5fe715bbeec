import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SluiceSyncProtocol
import SluiceTestSupport
import Testing

/// The service as an operator runs it: health and readiness checks that reach PostgreSQL
/// (and say so when it is gone), Prometheus metrics at `/metrics`, and one log line per
/// request carrying the id the answer sends back.
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncOperationTests {
    /// A GET: status, body and the answer's headers.
    static func get(_ url: URL, _ path: String, token: String? = nil) async throws -> (status: Int, body: String, headers: [AnyHashable: Any]) {
        var request = URLRequest(url: url.appendingPathComponent(path))
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as? HTTPURLResponse
        return (http?.statusCode ?? 0, String(decoding: data, as: UTF8.self), http?.allHeaderFields ?? [:])
    }

    /// The value of one sample of the metrics text (`name{labels} value`), or nil.
    static func sample(_ metrics: String, _ series: String) -> Double? {
        metrics.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    @Test func healthMetricsAndRequestLogs() async throws {
        let cluster = try PostgresCluster.shared()
        let postgres = try cluster.makeDatabase()
        let token = try SyncServiceProcess.addToken(postgres: postgres, space: "operated")
        let logPath = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-sync-\(UUID().uuidString).log").path
        #expect(FileManager.default.createFile(atPath: logPath, contents: nil))
        defer { try? FileManager.default.removeItem(atPath: logPath) }
        let log = try #require(FileHandle(forWritingAtPath: logPath))
        let service = try SyncServiceProcess(postgres: postgres, extraArguments: ["--log-level", "info"], log: log)
        defer { service.stop() }

        let health = try await Self.get(service.url, "v1/health")
        #expect(health.status == 200 && health.body == "ok")
        #expect(try await Self.get(service.url, "v1/ready").body == "ready")
        let requestID = try #require(health.headers.first { ($0.key as? String)?.lowercased() == "x-request-id" }?.value as? String)

        // Traffic: a device's push and pull, and a refused push.
        let device = try Device(server: service.url, token: token)
        try device.sql("INSERT INTO person (first_name, last_name) VALUES ('Ana', 'Kim'), ('Bo', 'Berg')")
        try device.sql("UPDATE person SET city = 'Oslo'")
        try await device.client.sync()
        let refused = try await Self.get(service.url, "v1/pull", token: "slt_not_a_token")
        #expect(refused.status == 401)
        #expect(refused.headers.contains { ($0.key as? String)?.lowercased() == "sluice-error" && ($0.value as? String) == "unauthorized" })

        let metrics = try await Self.get(service.url, "metrics")
        #expect(metrics.status == 200)
        #expect((Self.sample(metrics.body, #"sluice_sync_requests_total{route="push",status="200"}"#) ?? 0) >= 1, "\(metrics.body)")
        #expect((Self.sample(metrics.body, #"sluice_sync_requests_total{route="pull",status="200"}"#) ?? 0) >= 1)
        // As many as the service stored.
        let database = String(URLComponents(string: postgres)?.path.dropFirst() ?? "")
        let stored = try cluster.psql(database, "SELECT count(*) || ' ' || coalesce(sum(json_array_length(changes::json)), 0) FROM sluice_txn")
        #expect(stored.trimmingCharacters(in: .whitespacesAndNewlines) == "1 2", "the device's two commits, folded into one transaction")
        #expect(Self.sample(metrics.body, "sluice_sync_pushed_transactions_total") == 1)
        #expect(Self.sample(metrics.body, "sluice_sync_pushed_changes_total") == 2)
        #expect((Self.sample(metrics.body, "sluice_sync_pulled_bytes_total") ?? 0) > 0)
        #expect(Self.sample(metrics.body, #"sluice_sync_rejections_total{reason="unauthorized"}"#) == 1)
        #expect((Self.sample(metrics.body, #"sluice_sync_request_duration_seconds_count{route="push"}"#) ?? 0) >= 1)
        #expect(Self.sample(metrics.body, "sluice_sync_requests_in_flight") == 0, "a gauge of the queue, empty now")

        // PostgreSQL gone: health and readiness say so (by their deadline); back: both recover.
        _ = try cluster.psql("postgres", "ALTER DATABASE \"\(database)\" ALLOW_CONNECTIONS false")
        _ = try cluster.psql("postgres", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(database)'")
        let down = try await Self.get(service.url, "v1/health")
        #expect(down.status == 503 && down.body.contains("PostgreSQL does not answer"), "\(down)")
        #expect(try await Self.get(service.url, "v1/ready").status == 503)
        _ = try cluster.psql("postgres", "ALTER DATABASE \"\(database)\" ALLOW_CONNECTIONS true")
        var recovered = false
        for _ in 0..<100 where !recovered {
            recovered = try await Self.get(service.url, "v1/health").status == 200
            if !recovered { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(recovered)
        #expect(try await Self.get(service.url, "v1/ready").status == 200)

        // One log line per request, with the id the answer carried.
        try log.synchronize()
        let lines = try String(contentsOfFile: logPath, encoding: .utf8).split(separator: "\n")
        #expect(lines.contains { $0.contains(requestID) && $0.contains("path=/v1/health") && $0.contains("status=200") }, "\(lines.prefix(5))")
        #expect(lines.contains { $0.contains("path=/v1/pull") && $0.contains("status=401") && $0.contains("error=unauthorized") })
        #expect(lines.contains { $0.contains("path=/v1/push") && $0.contains("status=200") && $0.contains("duration_ms=") })
    }
}
