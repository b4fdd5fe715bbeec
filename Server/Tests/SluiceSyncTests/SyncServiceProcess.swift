import Foundation
import SluiceTestSupport

/// A `sluice-sync serve` process on a free loopback port.
final class SyncServiceProcess: @unchecked Sendable {
    // @unchecked Sendable: the process handle is only started and stopped by the test.
    let process = Process()
    let url: URL
    let postgres: String

    /// Starts a service on `port` (0: any free port; the URL says which); its log (standard
    /// error) goes to `log` when given; in `namespace` when given (pass `--host`).
    init(postgres: String, port: Int = 0, extraArguments: [String] = [], log: FileHandle? = nil, namespace: String? = nil) throws {
        self.postgres = postgres
        // The demo's schema unless the test names one.
        let schema = extraArguments.contains("--schema") ? [] : ["--demo"]
        let arguments = ["serve", "--postgres", postgres, "--port", String(port)] + schema + extraArguments
        if let namespace {
            // In a network namespace of its own (a host of NetworkLab's).
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
            process.arguments = ["netns", "exec", namespace, CommandRunner.executable(named: "sluice-sync").path] + arguments
        } else {
            process.executableURL = CommandRunner.executable(named: "sluice-sync")
            process.arguments = arguments
        }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = log ?? FileHandle.standardError
        try process.run()
        // Killed when the test process ends, even by a crash (its standard error is the test's).
        TestWatchdog.killOnExit(process.processIdentifier)
        // The first line says where it listens.
        var buffer = Data()
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
            if let line = String(decoding: buffer, as: UTF8.self).split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }) {
                guard let url = URL(string: String(line.dropFirst("listening on ".count))) else { break }
                self.url = url
                return
            }
        }
        process.terminate()
        throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "sluice-sync serve did not start: \(String(decoding: buffer, as: UTF8.self))"])
    }

    /// SIGTERM, then SIGKILL after two seconds (a graceful shutdown waits for open long polls).
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(2)
        while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        kill()
    }

    func kill() {
        if process.isRunning {
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        TestWatchdog.forget(process.processIdentifier)
    }

    deinit { stop() }

    /// A new bearer token for `space`, from `sluice-sync token add`.
    static func addToken(postgres: String, space: String) throws -> String {
        let output = try PostgresCluster.run(CommandRunner.executable(named: "sluice-sync").path,
                                             ["token", "add", "--postgres", postgres, "--space", space])
        guard let token = output.split(separator: "\n").last.map(String.init), token.hasPrefix("slt_") else {
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "token add printed: \(output)"])
        }
        return token
    }

    /// Revokes `token` with `sluice-sync token revoke`.
    static func revokeToken(postgres: String, _ token: String) throws {
        _ = try PostgresCluster.run(CommandRunner.executable(named: "sluice-sync").path, ["token", "revoke", "--postgres", postgres, token])
    }
}
