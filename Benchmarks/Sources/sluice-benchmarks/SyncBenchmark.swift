import Foundation
#if canImport(Glibc)
import Glibc
#endif
import SluiceDemo
import SluiceSyncClient
import Sluice

/// Sync through a real `sluice-sync` and PostgreSQL on loopback: a commit on device A → the
/// changeset on device B, the initial sync of 100,000 people to an empty device, and push
/// throughput. Uses `$SLUICE_BENCH_POSTGRES` (postgres://user@host:port/db) or starts a
/// throwaway cluster from Debian's packages; the service is the release `sluice-sync` of the
/// service package (`swift build -c release --package-path Server --product sluice-sync`,
/// or `$SLUICE_SYNC_BINARY`).
enum SyncBenchmark {
    struct Failure: Error, CustomStringConvertible { let description: String }

    /// Runs the sync rows; returns the table lines (printed as they come too).
    static func run(quick: Bool) async throws -> [String] {
        try await afterInitialSync(quick: quick) { binary, postgres, server, initial in try await run(quick: quick, binary, postgres, server, initial) }
    }

    /// The rows after the initial sync, on its service.
    private static func run(quick: Bool, _ binary: String, _ postgres: String, _ server: URL, _ initial: InitialSync) async throws -> [String] {
        let count = initial.count
        let (a, clientA, replaying, clientR) = (initial.a, initial.clientA, initial.replaying, initial.clientR)
        let (push, replayed, snapshot) = (initial.push, initial.replayed, initial.snapshot)

        // Push throughput of logged transactions: 100 transactions of 100 updates each.
        for batch in 0..<100 {
            try await a.write { db in
                try db.execute(sql: "UPDATE person SET age = age + 1 WHERE id > ? AND id <= ?", arguments: [.integer(Int64(batch * 100)), .integer(Int64(batch * 100 + 100))])
            }
        }
        let logged = try await seconds { try await clientA.sync() }
        _ = try await clientR.sync()

        let latencies = try await latency(from: a, clientA, to: replaying, clientR, samples: quick ? 15 : 41)
        let latency = Harness.median(latencies)
        // A service that cannot carry the crowd (an older one, for comparison) fails this row only.
        let crowd: String
        do {
            crowd = try await crowdLine(binary: binary, postgres: postgres, server: server, quick: quick)
        } catch {
            crowd = "| **sync:** 30 devices on one space | | failed: \(error) | | p99 ≤ 500 ms, none sent back | MISSED |"
        }
        let attachments: String
        do {
            attachments = try await SyncAttachmentBenchmark.line(binary: binary, postgres: postgres, quick: quick)
        } catch {
            attachments = "| **sync:** an attachment | | failed: \(error) | | | MISSED |"
        }
        let lines = [
            crowd,
            attachments,
            "| **sync:** a commit on device A → the changeset on device B (service and PostgreSQL on loopback; median of \(latencies.count)) | | \(Harness.format(latency)) | | ≤ 100 ms | \(latency <= 0.1 ? "ok" : "MISSED") |",
            "| **sync:** initial sync of \(count) people to an empty device: replaying the history (`startsFromSnapshot = false`) / from a snapshot (the default) | | \(Harness.format(replayed)) (\(Int(Double(count) / replayed)) rows/s) / \(Harness.format(snapshot)) (\(Int(Double(count) / snapshot)) rows/s) | | ≤ 10 s at 100,000 each | \(max(replayed, snapshot) <= 10 * Double(count) / 100_000 ? "ok" : "MISSED") |",
            "| **sync:** push of a store's \(count) existing people (first sync) / of 100 logged transactions × 100 updates | | \(Harness.format(push)) (\(Int(Double(count) / push)) rows/s) / \(Harness.format(logged)) (\(Int(10_000 / logged)) rows/s) | | rows per second | |",
        ]
        for line in lines { print(line) }
        return lines
    }

    /// The initial-sync devices' store configuration: the default, or with the writer's page
    /// cache `SLUICE_BENCH_CACHE_KIB` KiB (a development aid, as `SLUICE_BENCH_UPLOAD_ROWS`).
    static var storeConfiguration: Store.Configuration {
        var configuration = Store.Configuration()
        if let kib = ProcessInfo.processInfo.environment["SLUICE_BENCH_CACHE_KIB"].flatMap(Int.init) { configuration.writerCacheKiB = kib }
        return configuration
    }

    /// What ``initialSync(count:server:token:a:replaying:)`` measured, with the two stores
    /// that go on syncing (A, and the device that replayed A's history).
    struct InitialSync {
        var a: Store, clientA: SyncClient, replaying: Store, clientR: SyncClient
        /// The token the devices sync with.
        var token: String
        var push: Double, replayed: Double, snapshot: Double
        /// The people A pushed.
        var count: Int
    }

    /// Initial sync: `count` people on A (at `a`), pushed on A's first sync; then pulled by an
    /// empty device replaying the history (at `replaying`), then by one from a snapshot.
    static func initialSync(count: Int, server: URL, token: String, a pathA: String, replaying pathR: String) async throws -> InitialSync {
        var configuration = SyncConfiguration(tables: DemoSchema.syncedTables)
        // A development aid: the first upload's part size (SyncConfiguration.uploadBatchRows).
        if let rows = ProcessInfo.processInfo.environment["SLUICE_BENCH_UPLOAD_ROWS"].flatMap(Int.init) {
            configuration.uploadBatchRows = rows
        }
        let a = try Store(path: pathA, configuration: storeConfiguration)
        try a.migrate(demoTables)
        try await a.write { db in
            for index in 0..<count {
                try db.execute(sql: "INSERT INTO person (first_name, last_name, age, city) VALUES (?, ?, ?, ?)",
                               arguments: [.text("First\(index)"), .text("Last\(index % 997)"), .integer(Int64(index % 90)), .text(index % 3 == 0 ? "Oslo" : "Bergen")])
            }
        }
        let clientA = try SyncClient(store: a, server: server, token: token, configuration: configuration)
        let push = try await seconds { try await clientA.sync() }
        let replaying = try Store(path: pathR, configuration: storeConfiguration)
        try replaying.migrate(demoTables)
        var replay = configuration
        replay.startsFromSnapshot = false
        let clientR = try SyncClient(store: replaying, server: server, token: token, configuration: replay)
        let replayed = try await seconds { try await clientR.sync() }
        let pathB = freshDatabasePath("sync-b")
        defer { removeDatabase(at: pathB) }
        let b = try Store(path: pathB, configuration: storeConfiguration)
        try b.migrate(demoTables)
        // The default: a new device starts from a snapshot.
        let clientB = try SyncClient(store: b, server: server, token: token, configuration: configuration)
        let snapshot = try await seconds { try await clientB.sync() }
        for store in [b, replaying] {
            let pulled = try await store.read { db in try db.fetchCount(Person.self) }
            guard pulled == count else { throw Failure(description: "a new device has \(pulled) people after its initial sync, not \(count)") }
        }
        return InitialSync(a: a, clientA: clientA, replaying: replaying, clientR: clientR, token: token, push: push, replayed: replayed, snapshot: snapshot, count: count)
    }

    /// A throwaway PostgreSQL (or `SLUICE_BENCH_POSTGRES`), the release service on it and a
    /// token for space "bench"; the initial-sync rows measured there (``initialSync(count:server:token:a:replaying:)``),
    /// then `body` with them. The service stops and the stores go when `body` returns.
    static func afterInitialSync<T>(quick: Bool, _ body: (_ binary: String, _ postgres: String, _ server: URL, InitialSync) async throws -> T) async throws -> T {
        let postgres = try Cluster.database()
        let binary = try serviceBinary()
        let token = try Cluster.addToken(binary, postgres: postgres, space: "bench")
        let (service, server) = try startService(binary, postgres: postgres)
        defer { kill(service, SIGKILL); var status: Int32 = 0; waitpid(service, &status, 0) }
        let pathA = freshDatabasePath("sync-a"), pathR = freshDatabasePath("sync-r")
        defer { removeDatabase(at: pathA); removeDatabase(at: pathR) }
        let initial = try await initialSync(count: quick ? 20_000 : 100_000, server: server, token: token, a: pathA, replaying: pathR)
        return try await body(binary, postgres, server, initial)
    }

    /// `--only=sync-initial`: the initial-sync rows alone (a first push; replaying; a snapshot),
    /// then the same two on a history where every person was edited once since.
    static func runInitial(quick: Bool) async throws -> [String] {
        // The figures only: the stores go with the service once the closure returns.
        let (count, push, replayed, snapshot, edited) = try await afterInitialSync(quick: quick) { _, postgres, server, initial in
            (initial.count, initial.push, initial.replayed, initial.snapshot, try await afterEdits(initial, postgres: postgres, server: server))
        }
        let lines = [
            "| **sync:** initial sync of \(count) people to an empty device: replaying the history / from a snapshot | | \(Harness.format(replayed)) / \(Harness.format(snapshot)) | | ≤ 2 s each; a snapshot ≤ replaying | |",
            "| **sync:** the same after one edit of each person (a history of \(2 * count) changes): replaying / from a snapshot | | \(Harness.format(edited.replayed)) / \(Harness.format(edited.snapshot)) | | a snapshot ≤ replaying | |",
            "| **sync:** push of a store's \(count) existing people (first sync) | | \(Harness.format(push)) | | ≤ 2 s | |",
        ]
        for line in lines { print(line) }
        return lines
    }

    /// A's people each edited once (one transaction, pushed); then a new device replaying the
    /// history and one from a snapshot, timed, once PostgreSQL has vacuumed the service's rows
    /// (until then, reading rows just updated costs it about twice as much: its hint bits and
    /// pruning, and autovacuum beside the reads).
    private static func afterEdits(_ initial: InitialSync, postgres: String, server: URL) async throws -> (replayed: Double, snapshot: Double) {
        try await initial.a.write { db in try db.execute(sql: "UPDATE person SET age = age + 1") }
        try await initial.clientA.sync()
        try Cluster.psql(postgres, "VACUUM ANALYZE")
        var timings: [Double] = []
        for fromSnapshot in [false, true] {
            let path = freshDatabasePath("sync-edited")
            defer { removeDatabase(at: path) }
            let store = try Store(path: path, configuration: storeConfiguration)
            try store.migrate(demoTables)
            var configuration = SyncConfiguration(tables: DemoSchema.syncedTables)
            configuration.startsFromSnapshot = fromSnapshot
            let client = try SyncClient(store: store, server: server, token: initial.token, configuration: configuration)
            timings.append(try await seconds { try await client.sync() })
            // The ages A wrote (index % 90), each one more.
            let expected = (0..<initial.count).reduce(Int64(0)) { $0 + Int64($1 % 90 + 1) }
            let total = try await store.read { db in try db.fetchRows(sql: "SELECT count(*), sum(age) FROM person") }
            guard total.first?.values == [.integer(Int64(initial.count)), .integer(expected)] else {
                throw Failure(description: "a new device after the edits has (people, sum of ages) \(total.first?.values ?? []), not (\(initial.count), \(expected))")
            }
        }
        return (timings[0], timings[1])
    }

    /// A commit on A → the changeset on B, both following the service, `samples` times (one
    /// row of A's first 50 people updated each time, 30 ms apart). B's rowids are A's (it
    /// replayed A's history), so it watches the rows A changes. Returns each sample's seconds.
    static func latency(from a: Store, _ clientA: SyncClient, to b: Store, _ clientB: SyncClient, samples: Int) async throws -> [Double] {
        let arrivals = Arrivals()
        let observation = try b.rows(in: "person").filter("id <= 50").sorted(by: [Ordering("id")]).observe(on: DispatchQueue(label: "bench-b")) { change in
            if case .update = change { arrivals.arrived() }
        }
        defer { observation.invalidate() }
        let followers = [Task { try await clientA.follow() }, Task { try await clientB.follow() }]
        defer { followers.forEach { $0.cancel() } }
        try await Task.sleep(for: .milliseconds(500))
        var latencies: [Double] = []
        for sample in 0..<samples {
            let start = DispatchTime.now().uptimeNanoseconds
            let before = arrivals.count
            try await a.write { db in
                try db.execute(sql: "UPDATE person SET city = ? WHERE id = ?", arguments: [.text("City\(sample)"), .integer(Int64(1 + sample % 50))])
            }
            let deadline = start + 10_000_000_000
            while arrivals.count == before, DispatchTime.now().uptimeNanoseconds < deadline { try await Task.sleep(for: .microseconds(200)) }
            guard arrivals.count > before else { throw Failure(description: "B saw no changeset within 10 s") }
            latencies.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
            try await Task.sleep(for: .milliseconds(30))
        }
        return latencies
    }

    /// Only the A → B row (`--only=sync-latency`), with more samples: 1,000 people on A,
    /// replayed by B, then 201 commits on A.
    static func runLatency(quick: Bool) async throws -> [String] {
        let postgres = try Cluster.database()
        let binary = try serviceBinary()
        let token = try Cluster.addToken(binary, postgres: postgres, space: "latency")
        let (service, server) = try startService(binary, postgres: postgres)
        defer { kill(service, SIGKILL); var status: Int32 = 0; waitpid(service, &status, 0) }
        let configuration = SyncConfiguration(tables: DemoSchema.syncedTables)
        let pathA = freshDatabasePath("latency-a"), pathB = freshDatabasePath("latency-b")
        defer { removeDatabase(at: pathA); removeDatabase(at: pathB) }
        let a = try Store(path: pathA), b = try Store(path: pathB)
        try a.migrate(demoTables)
        try b.migrate(demoTables)
        try await a.write { db in
            for index in 0..<1_000 {
                try db.execute(sql: "INSERT INTO person (first_name, last_name, age, city) VALUES (?, ?, ?, ?)",
                               arguments: [.text("First\(index)"), .text("Last\(index)"), .integer(Int64(index % 90)), .text("Oslo")])
            }
        }
        let clientA = try SyncClient(store: a, server: server, token: token, configuration: configuration)
        // B replays A's history, so its rowids are A's (`latency` watches by rowid): from a
        // snapshot, the default since 2026-12-02, B numbered the rows in the order of their
        // global ids, and the row this benchmark watched was another (it failed: no changeset).
        var replaying = configuration
        replaying.startsFromSnapshot = false
        let clientB = try SyncClient(store: b, server: server, token: token, configuration: replaying)
        _ = try await clientA.sync()
        _ = try await clientB.sync()
        let latencies = try await latency(from: a, clientA, to: b, clientB, samples: quick ? 41 : 201).sorted()
        func at(_ fraction: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count) * fraction))] }
        let line = "| **sync:** a commit on device A → the changeset on device B, p10 / p50 / p90 of \(latencies.count) | Electric: 6 ms | "
            + "\(Harness.format(at(0.1))) / \(Harness.format(at(0.5))) / \(Harness.format(at(0.9))) | | ≤ 10 ms (p50) | \(at(0.5) <= 0.01 ? "ok" : "MISSED") |"
        print(line)
        return [line]
    }

    /// Only the 30-device row (`--only=sync-crowd`), for a profiler.
    static func runCrowd(quick: Bool) async throws -> [String] {
        let postgres = try Cluster.database()
        let binary = try serviceBinary()
        let (service, server) = try startService(binary, postgres: postgres)
        defer { kill(service, SIGKILL); var status: Int32 = 0; waitpid(service, &status, 0) }
        var lines: [String] = []
        // Issue 48's crowd: 100 devices on one space, p99 ≤ 500 ms.
        for devices in [30, 100] {
            let line = try await crowdLine(binary: binary, postgres: postgres, server: server, quick: quick, devices: devices)
            print(line)
            lines.append(line)
        }
        return lines
    }

    /// The release `sluice-sync` of the service package (Server/), or `$SLUICE_SYNC_BINARY`.
    static func serviceBinary() throws -> String {
        let binary = ProcessInfo.processInfo.environment["SLUICE_SYNC_BINARY"]
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("Server/.build/release/sluice-sync").path
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw Failure(description: "no sluice-sync at \(binary): run `swift build -c release --package-path Server --product sluice-sync` at the repository root")
        }
        return binary
    }

    /// The row of `devices` devices on one space (30 in the default run).
    static func crowdLine(binary: String, postgres: String, server: URL, quick: Bool, devices: Int = 30) async throws -> String {
        let crowd = try await crowdedSpace(binary: binary, postgres: postgres, servers: [server], devices: devices, commits: quick ? 8 : 20,
                                           space: "crowd-\(devices)")
        return "| **sync:** \(devices) devices on one space, each committing and syncing \(crowd.commits) times at once: commit → pushed and pulled, "
            + "p50 / p90 / p99 (pushes sent back to rebase; the devices' first syncs, all at once before: median / slowest) | | "
            + "\(Harness.format(crowd.p50)) / \(Harness.format(crowd.p90)) / \(Harness.format(crowd.p99)) (\(crowd.behind) of \(crowd.syncs); "
            + "joining \(Harness.format(crowd.join)) / \(Harness.format(crowd.slowestJoin))) "
            + "| | p99 ≤ 500 ms, none sent back | \(crowd.p99 <= 0.5 && crowd.behind == 0 ? "ok" : "MISSED") |"
    }

    /// `devices` devices on a space of their own (spread over `servers`, instances of the
    /// service on one PostgreSQL), each inserting a person and then updating it, syncing
    /// after every commit, all at once. Returns the p50 and p99 of commit → synced, how many
    /// pushes the service sent back to be rebased, and how long the commits took in all.
    static func crowdedSpace(binary: String, postgres: String, servers: [URL], devices: Int, commits: Int, space: String = "crowd") async throws
        -> (p50: Double, p90: Double, p99: Double, join: Double, slowestJoin: Double, behind: Int, syncs: Int, commits: Int, wall: Double) {
        let token = try Cluster.addToken(binary, postgres: postgres, space: space)
        let configuration = SyncConfiguration(tables: DemoSchema.syncedTables)
        var members: [(Store, SyncClient, String)] = []
        for index in 0..<devices {
            let path = freshDatabasePath("crowd-\(index)")
            let store = try Store(path: path)
            try store.migrate(demoTables)
            members.append((store, try SyncClient(store: store, server: servers[index % servers.count], token: token, configuration: configuration), path))
        }
        defer { for (_, _, path) in members { removeDatabase(at: path) } }
        // The devices join the space first, all at once (each one's first sync), as an app's
        // devices have before their users commit anything; timed apart from the commits.
        let joins = try await withThrowingTaskGroup(of: Double.self) { group in
            for (_, client, _) in members { group.addTask { try await seconds { try await client.sync() } } }
            return try await group.reduce(into: [Double]()) { $0.append($1) }.sorted()
        }
        let started = DispatchTime.now().uptimeNanoseconds
        let results = try await withThrowingTaskGroup(of: ([Double], Int).self) { group in
            for (index, (store, client, _)) in members.enumerated() {
                group.addTask {
                    var durations: [Double] = []
                    var behind = 0
                    var own: Int64 = 0
                    for commit in 0..<commits {
                        let start = DispatchTime.now().uptimeNanoseconds
                        if commit == 0 {
                            own = try await store.write { db in
                                try db.execute(sql: "INSERT INTO person (first_name, last_name) VALUES (?, 'Crowd')", arguments: [.text("D\(index)")])
                                return db.lastInsertedRowID
                            }
                        } else {
                            try await store.write { [own] db in
                                try db.execute(sql: "UPDATE person SET age = ? WHERE id = ?", arguments: [.integer(Int64(commit)), .integer(own)])
                            }
                        }
                        behind += try await client.sync().behind
                        durations.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
                    }
                    return (durations, behind)
                }
            }
            var all: ([Double], Int) = ([], 0)
            for try await (durations, behind) in group { all.0 += durations; all.1 += behind }
            return all
        }
        let wall = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        // Every device ends with every device's person.
        for (store, client, _) in members {
            try await client.sync()
            let count = try await store.read { db in try db.fetchCount(Person.self) }
            guard count == devices else { throw Failure(description: "a crowded device has \(count) people, not \(devices)") }
        }
        let sorted = results.0.sorted()
        let p90 = sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.9).rounded(.up)) - 1)]
        let p99 = sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
        return (Harness.median(sorted), p90, p99, Harness.median(joins), joins.last ?? 0, results.1, sorted.count, commits, wall)
    }

    static func seconds(_ body: () async throws -> Void) async rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try await body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    /// Starts `sluice-sync serve --port 0`; returns its pid and URL.
    static func startService(_ binary: String, postgres: String, extra: [String] = []) throws -> (pid_t, URL) {
        var pipe: [Int32] = [0, 0]
        guard Glibc.pipe(&pipe) == 0 else { throw Failure(description: "pipe failed") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
        posix_spawn_file_actions_addclose(&actions, pipe[0])
        let schema = extra.contains("--schema") ? [] : ["--demo"]
        let arguments = [binary, "serve", "--postgres", postgres, "--port", "0", "--rate-limit", "10000"] + schema + extra
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, binary, &actions, nil, argv, environ) == 0 else { throw Failure(description: "cannot start \(binary)") }
        close(pipe[1])
        var text = ""
        var buffer = [UInt8](repeating: 0, count: 256)
        while !text.contains("\n") {
            let count = read(pipe[0], &buffer, buffer.count)
            guard count > 0 else { break }
            text += String(decoding: buffer[0..<count], as: UTF8.self)
        }
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }),
              let url = URL(string: String(line.dropFirst("listening on ".count))) else {
            throw Failure(description: "sluice-sync did not start: \(text)")
        }
        return (pid, url)
    }

    /// Changesets counted from the observer's queue.
    final class Arrivals: @unchecked Sendable {
        // @unchecked Sendable: guarded by `lock`.
        private let lock = NSLock()
        private var stored = 0
        var count: Int { lock.withLock { stored } }
        func arrived() { lock.withLock { stored += 1 } }
    }

    /// PostgreSQL for the benchmark: `$SLUICE_BENCH_POSTGRES`, or a throwaway cluster.
    enum Cluster {
        static func database() throws -> String {
            if let url = ProcessInfo.processInfo.environment["SLUICE_BENCH_POSTGRES"] { return url }
            let root = "/usr/lib/postgresql"
            guard let version = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).max() else {
                throw Failure(description: "PostgreSQL is not installed (apt-get install postgresql), or set SLUICE_BENCH_POSTGRES")
            }
            let bin = "\(root)/\(version)/bin"
            let directory = "/tmp/sluice-bench-pg-\(getpid())"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let prefix = getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []
            if getuid() == 0 { _ = try output("/bin/chown", ["postgres:postgres", directory]) }
            try spawn(prefix + ["\(bin)/initdb", "-D", "\(directory)/data", "-U", "sluice", "--auth=trust", "--no-sync", "-E", "UTF8"])
            let port = Int.random(in: 41_000...49_000)
            try spawn(prefix + ["\(bin)/pg_ctl", "-D", "\(directory)/data", "-l", "\(directory)/log", "-w", "start",
                                "-o", "-c listen_addresses=127.0.0.1 -p \(port) -k \(directory)"])
            stop = prefix + ["\(bin)/pg_ctl", "-D", "\(directory)/data", "-m", "immediate", "stop"]
            atexit {
                if let stop = Cluster.stop { try? Cluster.spawn(stop) }
                try? FileManager.default.removeItem(atPath: "/tmp/sluice-bench-pg-\(getpid())")
            }
            _ = try output("/usr/bin/psql", ["-h", "127.0.0.1", "-p", String(port), "-U", "sluice", "-d", "postgres", "-c", "CREATE DATABASE bench"])
            return "postgres://sluice@127.0.0.1:\(port)/bench"
        }

        nonisolated(unsafe) static var stop: [String]?

        /// Runs `sql` on the database at `postgres` (a URL) with psql.
        static func psql(_ postgres: String, _ sql: String) throws {
            _ = try output("/usr/bin/psql", ["-d", postgres, "-q", "-c", sql])
        }

        /// A new token for `space` (made when it is new), from `sluice-sync token add`.
        static func addToken(_ binary: String, postgres: String, space: String) throws -> String {
            try output(binary, ["token", "add", "--postgres", postgres, "--space", space]).split(separator: "\n").last.map(String.init) ?? ""
        }

        /// Runs a command with its output discarded (posix_spawn: pg_ctl leaves a server running).
        static func spawn(_ arguments: [String]) throws {
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            let argv = arguments.map { strdup($0) } + [nil]
            defer { argv.forEach { free($0) } }
            var pid: pid_t = 0
            guard posix_spawn(&pid, arguments[0], &actions, nil, argv, environ) == 0 else { throw Failure(description: "cannot start \(arguments[0])") }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            guard status == 0 else { throw Failure(description: "\(arguments.joined(separator: " ")) failed (\(status))") }
        }

        static func output(_ executable: String, _ arguments: [String]) throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            try process.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let text = String(decoding: data, as: UTF8.self)
            guard process.terminationStatus == 0 else { throw Failure(description: "\(executable) failed: \(text)") }
            return text
        }
    }
}
