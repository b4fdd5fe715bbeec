import Foundation

/// Runs the built `sluice` binary in a temporary folder, as a person would.
public struct CommandRunner {
    /// What a run printed and how it ended.
    public struct Result: CustomStringConvertible {
        public let status: Int32
        public let stdout: String
        public let stderr: String
        public var description: String { "exit \(status)\n--- stdout\n\(stdout)\n--- stderr\n\(stderr)" }
    }

    /// The folder the commands run in.
    public let directory: URL

    public init() {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("sluice-cli-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    /// The `sluice` executable, built next to the test runner by `swift test`.
    public static var binary: URL { executable(named: "sluice") }

    /// An executable of this package, built next to the test runner.
    public static func executable(named name: String) -> URL {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
            Bundle.main.bundleURL,
            Bundle.main.bundleURL.deletingLastPathComponent(),
        ]
        for folder in candidates {
            let url = folder.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return candidates[0].appendingPathComponent(name)
    }

    /// A path inside the folder.
    public func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Writes a file into the folder and returns its path.
    @discardableResult
    public func write(_ name: String, _ contents: String) throws -> String {
        try contents.write(toFile: path(name), atomically: true, encoding: .utf8)
        return path(name)
    }

    /// Runs `sluice` with arguments; `environment` adds to a clean one;
    /// `input` is its standard input (none by default).
    public func run(_ arguments: [String], environment: [String: String] = [:], input: String? = nil) throws -> Result {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        process.currentDirectoryURL = directory
        var env = ProcessInfo.processInfo.environment
        env["SLUICE_DB"] = nil
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let outURL = directory.appendingPathComponent(".stdout-\(UUID().uuidString)")
        let errURL = directory.appendingPathComponent(".stderr-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        process.standardOutput = out
        process.standardError = err
        if let input {
            let inURL = directory.appendingPathComponent(".stdin-\(UUID().uuidString)")
            try input.write(to: inURL, atomically: true, encoding: .utf8)
            process.standardInput = try FileHandle(forReadingFrom: inURL)
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        return Result(
            status: process.terminationStatus,
            stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
            stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }
}

/// A `sluice` process that keeps running (`watch`), read line by line.
public final class RunningCommand: @unchecked Sendable {
    // @unchecked Sendable: `buffer` is guarded by `lock`.
    private let process = Process()
    private let lock = NSLock()
    private var buffer = Data()

    init(_ runner: CommandRunner, _ arguments: [String]) throws {
        process.executableURL = CommandRunner.binary
        process.arguments = arguments
        process.currentDirectoryURL = runner.directory
        var environment = ProcessInfo.processInfo.environment
        environment["SLUICE_DB"] = nil
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        output.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.lock()
            self.buffer.append(data)
            self.lock.unlock()
        }
        try process.run()
        TestWatchdog.killOnExit(process.processIdentifier)
    }

    /// The next complete line, waiting up to `timeout` seconds.
    public func nextLine(timeout: TimeInterval = 5) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            lock.lock()
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffer[buffer.startIndex..<newline]
                buffer.removeSubrange(buffer.startIndex...newline)
                lock.unlock()
                return String(decoding: line, as: UTF8.self)
            }
            lock.unlock()
            usleep(1_000)
        }
        return nil
    }

    /// Stops the process (as Ctrl-C would).
    public func interrupt() {
        if process.isRunning { process.interrupt() }
        process.waitUntilExit()
        TestWatchdog.forget(process.processIdentifier)
    }

    deinit { interrupt() }
}

extension CommandRunner {
    /// Starts `sluice` and returns while it runs.
    public func start(_ arguments: [String]) throws -> RunningCommand {
        try RunningCommand(self, arguments)
    }
}
