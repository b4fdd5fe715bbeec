import Foundation

/// A PostgreSQL server started from the system's binaries (Debian's `postgresql` package:
/// `/usr/lib/postgresql/<version>/bin`) in a temporary folder, on loopback, with trust
/// authentication: for development (`sluice-sync serve --throwaway-postgres`) and tests.
/// Run as root, the server runs as the `postgres` user (PostgreSQL refuses root).
/// ``stop()`` stops it and removes the folder.
public final class ThrowawayPostgres: Sendable {
    /// The superuser, `sluice`.
    public let user = "sluice"
    /// The address it listens on (loopback unless given).
    public let host: String
    public let port: Int
    /// The folder holding the data, the log and the socket.
    public let directory: String
    /// pg_ctl's command line for this server.
    private let control: [String]

    /// `postgres://sluice@127.0.0.1:PORT/DATABASE`.
    public func url(database: String = "postgres") -> String { "postgres://\(user)@\(host):\(port)/\(database)" }

    /// Creates and starts a server. `durable` false turns fsync off (faster; a crash of the
    /// machine may corrupt it: fine for a throwaway). With `namespace`, the server runs in
    /// that network namespace (`ip netns exec`), listening on `host` there.
    public init(durable: Bool = true, maximumConnections: Int = 100, host: String = "127.0.0.1", namespace: String? = nil) throws {
        self.host = host
        let binaries = try Self.binaries()
        directory = "/tmp/sluice-pg-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let asPostgres = getuid() == 0
        if asPostgres { try Self.run("/bin/chown", ["postgres:postgres", directory]) }
        let prefix = (namespace.map { ["/usr/sbin/ip", "netns", "exec", $0] } ?? []) + (asPostgres ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : [])
        func command(_ tool: String, _ arguments: [String]) throws {
            let full = prefix + ["\(binaries)/\(tool)"] + arguments
            try Self.run(full[0], Array(full.dropFirst()), capture: false)
        }
        do {
            try command("initdb", ["-D", "\(directory)/data", "-U", user, "--auth=trust", "--no-sync", "-E", "UTF8"])
            if host != "127.0.0.1" {
                // Listening on another address (a test's private net): trust its subnet too.
                let rules = try FileHandle(forWritingTo: URL(fileURLWithPath: "\(directory)/data/pg_hba.conf"))
                try rules.seekToEnd()
                try rules.write(contentsOf: Data("host all all samenet trust\n".utf8))
                try rules.close()
            }
            // A port below Linux's ephemeral range (32768–60999), where every outgoing
            // connection takes one: a random port there was found held by one ("could not
            // bind ... Address already in use"). Another socket may still hold the one
            // chosen: then another port.
            var started: Int?
            for attempt in 1...Self.portAttempts {
                let candidate = Int.random(in: 20_000...32_000)
                do {
                    try command("pg_ctl", ["-D", "\(directory)/data", "-l", "\(directory)/log", "-w", "-t", "60", "start", "-o",
                                           "-c listen_addresses=\(host) -p \(candidate) -k \(directory) -c fsync=\(durable ? "on" : "off") -c max_connections=\(maximumConnections)"])
                    started = candidate
                    break
                } catch where attempt < Self.portAttempts {
                    continue
                }
            }
            guard let started else { throw Failure(description: "PostgreSQL did not start (see \(directory)/log)") }
            port = started
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        control = prefix + ["\(binaries)/pg_ctl", "-D", "\(directory)/data"]
    }

    /// Ports tried before giving up.
    static let portAttempts = 8

    /// Restarts the server (fast shutdown: open connections are cut), on the same port.
    public func restart() throws {
        try Self.run(control[0], Array(control.dropFirst()) + ["-w", "-t", "60", "-m", "fast", "restart"], capture: false)
    }

    /// Stops the server at once and removes its folder.
    public func stop() {
        _ = try? Self.run(control[0], Array(control.dropFirst()) + ["-m", "immediate", "stop"], capture: false)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The command that stops the server at once (``stop()``'s), for a process that must
    /// run it after this one is gone.
    public var stopCommand: [String] { control + ["-m", "immediate", "stop"] }

    /// The newest installed server's binaries: Debian's folder, else the `PATH`'s `initdb`.
    static func binaries() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        if let version = versions.compactMap(Int.init).max() { return "\(root)/\(version)/bin" }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        if let folder = path.split(separator: ":").map(String.init).first(where: { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") }) {
            return folder
        }
        throw Failure(description: "PostgreSQL's server is not installed (no \(root)/<version>/bin, no initdb on the PATH): apt-get install postgresql")
    }

    /// What went wrong starting or running a tool.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Runs a tool and waits for it; returns its output when `capture`.
    @discardableResult
    public static func run(_ executable: String, _ arguments: [String], capture: Bool = true) throws -> String {
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
            // inherited pipe (a psql's, a test's) would never reach end of file.
            closeInheritedDescriptors(&actions)
            let code = posix_spawn(&pid, executable, &actions, nil, argv, environ)
            guard code == 0 else { throw Failure(description: "cannot start \(executable): error \(code)") }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            guard status == 0 else {
                throw Failure(description: "\(executable) \(arguments.joined(separator: " ")) failed (status \(status))")
            }
            return ""
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: "/tmp")
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw Failure(description: "\(executable) \(arguments.joined(separator: " ")) failed: \(text)")
        }
        return text
    }
}
