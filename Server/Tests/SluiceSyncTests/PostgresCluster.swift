import Foundation
import SluiceSync
import SluiceSyncDevelopment
import SluiceTestSupport

/// A throwaway PostgreSQL for the sync tests: the server from Debian's packages, started
/// once per test process on loopback in a temporary folder (as the `postgres` user when the
/// tests run as root: PostgreSQL refuses root), stopped when the process exits. Set
/// `SLUICE_TEST_POSTGRES=postgres://USER@HOST:PORT/DB` to use a running server instead,
/// or `SLUICE_NO_POSTGRES=1` to skip the sync tests.
final class PostgresCluster: Sendable {
    /// postgres://USER@127.0.0.1:PORT — add a database name.
    let base: String
    let host: String
    let port: Int
    let user: String

    static let skipReason: String? = ProcessInfo.processInfo.environment["SLUICE_NO_POSTGRES"] == "1"
        ? "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL" : nil

    /// The cluster, started on first use. (Not a `static let`: starting it runs processes,
    /// and Foundation's process monitor must not wait on the lock of a global's initializer.)
    static func shared() throws -> PostgresCluster {
        try lock.withLock {
            if let cluster { return cluster }
            let started = try PostgresCluster()
            cluster = started
            return started
        }
    }

    /// A cluster of its own, for a test that restarts it (never `SLUICE_TEST_POSTGRES`'s).
    static func dedicated() throws -> PostgresCluster {
        try lock.withLock { try PostgresCluster(dedicated: true) }
    }

    /// True when the tests use a server they did not start (which they cannot restart).
    static var external: Bool { ProcessInfo.processInfo.environment["SLUICE_TEST_POSTGRES"] != nil }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var cluster: PostgresCluster?
    /// The server this process started (nil for an external one).
    private let server: ThrowawayPostgres?

    /// Restarts the server (fast shutdown: open connections are cut), on the same port.
    func restart() throws {
        try server?.restart()
    }

    private init(dedicated: Bool = false) throws {
        if !dedicated, let url = ProcessInfo.processInfo.environment["SLUICE_TEST_POSTGRES"], let components = URLComponents(string: url) {
            server = nil
            host = components.host ?? "127.0.0.1"
            port = components.port ?? 5432
            user = components.user ?? "postgres"
            base = "postgres://\(user)@\(host):\(port)"
            return
        }
        let server = try ThrowawayPostgres(durable: false, maximumConnections: 200)
        self.server = server
        if PostgresCluster.started.isEmpty {
            atexit { PostgresCluster.started.forEach { $0.stop() } }
        }
        PostgresCluster.started.append(server)
        // Stopped also when the test process crashes (no atexit then).
        TestWatchdog.runOnExit(server.stopCommand)
        host = server.host
        port = server.port
        user = server.user
        base = "postgres://\(user)@\(host):\(port)"
    }

    /// The servers this process started, stopped at exit (guarded by `lock`).
    nonisolated(unsafe) static var started: [ThrowawayPostgres] = []

    /// A new, empty database; returns its URL.
    func makeDatabase() throws -> String {
        let name = "sync_\(UUID().uuidString.prefix(8).lowercased())"
        try psql("postgres", "CREATE DATABASE \(name)")
        return "\(base)/\(name)"
    }

    /// Runs SQL with the psql shell.
    @discardableResult
    func psql(_ database: String, _ sql: String) throws -> String {
        try Self.run("/usr/bin/psql", ["-h", host, "-p", String(port), "-U", user, "-d", database, "-v", "ON_ERROR_STOP=1", "-tAc", sql])
    }

    @discardableResult
    static func run(_ executable: String, _ arguments: [String], capture: Bool = true) throws -> String {
        try ThrowawayPostgres.run(executable, arguments, capture: capture)
    }
}
