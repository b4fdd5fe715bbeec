import Dispatch
import Foundation
import Glibc
import Sluice
import SluiceDemo
import SluiceSyncClient

/// The service scaled out on one machine: 1 and 2 instances of `sluice-sync` on one
/// PostgreSQL, 30 devices spread over them syncing at once (pushes per second, p50 / p99 of
/// commit → pushed and pulled), and a commit on device A → device B when A and B use
/// different instances (the live channel crosses instances through PostgreSQL's NOTIFY).
enum SyncScaleBenchmark {
    static func run(quick: Bool) async throws -> [String] {
        let binary = try SyncBenchmark.serviceBinary()
        var lines: [String] = []
        let postgres = try SyncBenchmark.Cluster.database()
        for count in [1, 2] {
            var services: [(pid_t, URL)] = []
            for _ in 0..<count { services.append(try SyncBenchmark.startService(binary, postgres: postgres)) }
            defer { for (pid, _) in services { kill(pid, SIGKILL); var status: Int32 = 0; waitpid(pid, &status, 0) } }
            let servers = services.map(\.1)
            let crowd = try await SyncBenchmark.crowdedSpace(binary: binary, postgres: postgres, servers: servers, devices: 30, commits: quick ? 8 : 20,
                                                           space: "crowd-\(count)")
            let propagation = try await crossInstanceLatency(binary: binary, postgres: postgres, space: "relay-\(count)", from: servers[0],
                                                             to: servers[servers.count - 1], samples: quick ? 9 : 21)
            let pushes = Double(crowd.syncs) / crowd.wall
            let line = "| **sync, scaled out:** \(count) instance\(count == 1 ? "" : "s") of `sluice-sync` on one PostgreSQL, 30 devices spread over them, "
                + "each committing and syncing \(crowd.commits) times at once: pushes/s / p50 / p99 of commit → pushed and pulled; a commit on A → B "
                + "(\(count == 1 ? "one instance" : "A and B on different instances"), median) | | \(Int(pushes)) pushes/s / \(Harness.format(crowd.p50)) / "
                + "\(Harness.format(crowd.p99)) (\(crowd.behind) sent back); A → B \(Harness.format(propagation)) | | | |"
            print(line)
            lines.append(line)
        }
        return lines
    }

    /// The median time from a commit on a device following `from` to its row on a device
    /// following `to`.
    static func crossInstanceLatency(binary: String, postgres: String, space: String, from: URL, to: URL, samples: Int) async throws -> Double {
        let token = try SyncBenchmark.Cluster.addToken(binary, postgres: postgres, space: space)
        let configuration = SyncConfiguration(tables: DemoSchema.syncedTables)
        let pathA = freshDatabasePath("relay-a"), pathB = freshDatabasePath("relay-b")
        defer { removeDatabase(at: pathA); removeDatabase(at: pathB) }
        let a = try Store(path: pathA), b = try Store(path: pathB)
        try a.migrate(demoTables)
        try b.migrate(demoTables)
        let clientA = try SyncClient(store: a, server: from, token: token, configuration: configuration)
        let clientB = try SyncClient(store: b, server: to, token: token, configuration: configuration)
        try await clientA.sync()
        try await clientB.sync()
        let followers = [Task { try await clientA.follow() }, Task { try await clientB.follow() }]
        defer { followers.forEach { $0.cancel() } }
        try await Task.sleep(for: .milliseconds(500))
        var latencies: [Double] = []
        for sample in 0..<samples {
            let name = "Relay\(sample)"
            let start = DispatchTime.now().uptimeNanoseconds
            try await a.write { db in try db.execute(sql: "INSERT INTO person (first_name, last_name) VALUES (?, 'R')", arguments: [.text(name)]) }
            let deadline = start + 10_000_000_000
            while try await b.read({ db in try db.fetchCount(Person.self, filter: Filter("first_name == $0", name)) }) == 0 {
                guard DispatchTime.now().uptimeNanoseconds < deadline else { throw SyncBenchmark.Failure(description: "B saw no row within 10 s") }
                try await Task.sleep(for: .microseconds(200))
            }
            latencies.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
            try await Task.sleep(for: .milliseconds(30))
        }
        return Harness.median(latencies)
    }
}
