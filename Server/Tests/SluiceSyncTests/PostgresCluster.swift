import Foundation
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
    /// pg_ctl's command line for this cluster (nil for an external server).
    private let control: [String]?

    /// Restarts the server (fast shutdown: open connections are cut), on the same port.
    func restart() throws {
        guard let control else { return }
        try Self.run(control[0], Array(control.dropFirst()) + ["-w", "-t", "60", "-m", "fast", "restart"], capture: false)
    }

    private init(dedicated: Bool = false) throws {
        if !dedicated, let url = ProcessInfo.processInfo.environment["SLUICE_TEST_POSTGRES"], let components = URLComponents(string: url) {
            control = nil
            host = components.host ?? "127.0.0.1"
            port = components.port ?? 5432
            user = components.user ?? "postgres"
            base = "postgres://\(user)@\(host):\(port)"
            return
        }
        let binaries = try Self.binaries()
        let directory = "/tmp/sluice-pg-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let asPostgres = getuid() == 0
        if asPostgres { try Self.run("/bin/chown", ["postgres:postgres", directory]) }
        func command(_ tool: String, _ arguments: [String]) throws {
            // Not captured: the server that pg_ctl starts would hold the pipe open forever.
            let path = "\(binaries)/\(tool)"
            if asPostgres {
                try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", path] + arguments, capture: false)
            } else {
                try Self.run(path, arguments, capture: false)
            }
        }
        try command("initdb", ["-D", "\(directory)/data", "-U", "sluice", "--auth=trust", "--no-sync", "-E", "UTF8"])
        let port = Int.random(in: 20_000...40_000)
        try command("pg_ctl", ["-D", "\(directory)/data", "-l", "\(directory)/log", "-w", "-t", "60", "start",
                               "-o", "-c listen_addresses=127.0.0.1 -p \(port) -k \(directory) -c fsync=off -c max_connections=200"])
        let control = (asPostgres ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []) + ["\(binaries)/pg_ctl", "-D", "\(directory)/data"]
        self.control = control
        if PostgresCluster.started.isEmpty {
            atexit {
                for (control, directory) in PostgresCluster.started {
                    let process = Process()
                    process.executableURL = URL(fileURLWithPath: control[0])
                    process.arguments = Array(control.dropFirst()) + ["-m", "immediate", "stop"]
                    try? process.run()
                    process.waitUntilExit()
                    try? FileManager.default.removeItem(atPath: directory)
                }
            }
        }
        PostgresCluster.started.append((control, directory))
        host = "127.0.0.1"
        self.port = port
        user = "sluice"
        base = "postgres://sluice@127.0.0.1:\(port)"
    }

    /// The clusters this process started, stopped at exit (guarded by `lock`).
    nonisolated(unsafe) static var started: [([String], String)] = []

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

    private static func binaries() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        guard let version = versions.compactMap(Int.init).max() else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "PostgreSQL is not installed (apt-get install postgresql), or set SLUICE_NO_POSTGRES=1"])
        }
        return "\(root)/\(version)/bin"
    }

    @discardableResult
    static func run(_ executable: String, _ arguments: [String], capture: Bool = true) throws -> String {
        if !capture {
            // posix_spawn and waitpid, not Process: the server pg_ctl leaves running keeps
            // Foundation's process monitor from ever seeing pg_ctl end.
            var pid: pid_t = 0
            let argv = ([executable] + arguments).map { strdup($0) } + [nil]
            defer { argv.forEach { free($0) } }
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            // Nothing else of ours goes with it: the server pg_ctl starts lives on, and an
            // inherited pipe of a psql another test runs at the same time would never reach
            // end of file (a convergence test hung reading one while PostgreSQL was restarted).
            _ = posix_spawn_file_actions_addclosefrom_np(&actions, 3)
            let code = posix_spawn(&pid, executable, &actions, nil, argv, environ)
            guard code == 0 else {
                throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "cannot start \(executable): \(code)"])
            }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            guard status == 0 else {
                throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "\(executable) \(arguments.joined(separator: " ")) failed (status \(status))"])
            }
            return ""
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: "/tmp")
        let output = Pipe()
        process.standardOutput = capture ? output : FileHandle.nullDevice
        process.standardError = capture ? output : FileHandle.nullDevice
        try process.run()
        let data = capture ? output.fileHandleForReading.readDataToEndOfFile() : Data()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "\(executable) \(arguments.joined(separator: " ")) failed: \(text)"])
        }
        return text
    }
}

/// glibc's (2.34+) `posix_spawn_file_actions_addclosefrom_np`, which the Glibc module does not export.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func posix_spawn_file_actions_addclosefrom_np(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32
