import Foundation
import SluiceSyncConformance
import SluiceDemo
import SluiceSync
import SluiceSyncDevelopment
import SluiceTestSupport
import Sluice
import Testing

/// The service scaled out over hosts: PostgreSQL on one network namespace, two `sluice-sync`
/// instances on two others, devices syncing from a fourth (the `sluice sync` CLI run there).
/// One instance is killed and one link cut mid-run; once both are back, every device and the
/// service hold the same rows and every edit is kept.
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil && NetworkLab.skipReason == nil,
                             "needs PostgreSQL and network namespaces: \(PostgresCluster.skipReason ?? NetworkLab.skipReason ?? "")"))
struct SyncNetworkTests {
    @Test func instancesOnTheirOwnHostsSurviveAKillAndACutLink() async throws {
        let lab = try NetworkLab(hosts: ["db", "one", "two", "devices"])
        defer { lab.tearDown() }
        let server = try ThrowawayPostgres(durable: false, host: lab.address("db"), namespace: lab.namespace("db"))
        defer { server.stop() }
        _ = try PostgresCluster.run("/usr/bin/psql", ["-h", server.host, "-p", String(server.port), "-U", server.user, "-d", "postgres", "-c", "CREATE DATABASE lab"])
        let postgres = server.url(database: "lab")
        let token = try SyncServiceProcess.addToken(postgres: postgres, space: "hosts")
        func start(_ host: String) throws -> SyncServiceProcess {
            try SyncServiceProcess(postgres: postgres, extraArguments: ["--host", lab.address(host)], namespace: lab.namespace(host))
        }
        var one = try start("one")
        let two = try start("two")
        defer { one.stop(); two.stop() }

        let sluice = CommandRunner.executable(named: "sluice").path
        let devices = (0..<4).map { _ in TemporaryDatabase() }
        let stores = try devices.map { database in
            let store = try database.store()
            try store.migrate(DemoSchema.migrations)
            return store
        }
        /// Device `index` syncs through `service` from the devices' host; whether it succeeded.
        let paths = devices.map(\.path)
        @Sendable func sync(_ index: Int, through service: SyncServiceProcess) throws -> Bool {
            try lab.exec("devices", [sluice, "sync", "--db", paths[index], "--server", service.url.absoluteString, "--token", token]) == 0
        }
        var outcomes: [String] = []
        for round in 0..<6 {
            if round == 2 { one.kill() }                            // an instance dies
            if round == 3 { try lab.link("two", up: false) }        // a link is cut
            if round == 4 { try lab.link("two", up: true) }
            if round == 5 { one = try start("one") }               // and comes back
            for (index, store) in stores.enumerated() {
                try await store.write { db in
                    try db.execute(sql: "INSERT INTO person (first_name, last_name) VALUES (?, ?)", arguments: [.text("D\(index)"), .text("R\(round)")])
                    try db.execute(sql: "UPDATE person SET age = ? WHERE first_name = ?", arguments: [.integer(Int64(round)), .text("D\(index)")])
                }
            }
            // The devices sync at once. Devices 0 and 1 use instance one, 2 and 3 instance
            // two; while one is down, its devices go to two (as a load balancer would send
            // them); a device behind the cut link waits for its request's timeout.
            let services = (0..<stores.count).map { index in index < 2 && round != 2 && round != 3 && round != 4 ? one : two }
            let results = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
                for index in stores.indices {
                    let service = services[index]
                    group.addTask { (index, try sync(index, through: service)) }
                }
                return try await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
            }
            outcomes += results.sorted { $0.key < $1.key }.map { "r\(round)d\($0.key):\($0.value ? "ok" : "failed")" }
        }
        #expect(outcomes.contains { $0.hasSuffix("failed") }, "the faults were felt: \(outcomes)")
        // Healed: everyone syncs until it succeeds, twice over, through either instance.
        for pass in 0..<2 {
            for index in devices.indices {
                var synced = false
                for attempt in 0..<20 where !synced {
                    synced = try sync(index, through: (index + pass + attempt) % 2 == 0 ? one : two)
                    if !synced { try await Task.sleep(for: .milliseconds(250)) }
                }
                #expect(synced, "device \(index) syncs once the faults are over")
            }
        }
        let contents = try stores.map { try SyncContent.of($0) }
        #expect(contents.allSatisfy { $0 == contents[0] }, "every device holds the same rows")
        #expect(try await stores[0].read { db in try db.fetchCount(Person.self) } == 24, "every edit is kept: 4 devices × 6 rounds")
        let stored = try PostgresCluster.run("/usr/bin/psql", ["-h", server.host, "-p", String(server.port), "-U", server.user, "-d", "lab", "-tAc",
                                                              "SELECT count(*) FROM sluice_row WHERE tbl = 'person' AND NOT deleted"])
        #expect(stored.trimmingCharacters(in: .whitespacesAndNewlines) == "24", "the service holds them too")
    }
}
