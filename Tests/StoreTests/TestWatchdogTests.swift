import Foundation
import SluiceTestSupport
import Testing

/// A test process that crashes leaves no helper behind: before, a crashed test's services
/// and servers lived on holding its standard error, and `swift test` waited for ever.
@Suite(.timeLimit(.minutes(10))) struct TestWatchdogTests {
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/stat"), "the watchdog reads /proc (Linux)"))
    func aCrashedProcessesHelpersAreEnded() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("watchdog-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let pidFile = folder.appendingPathComponent("helper.pid")
        let process = Process()
        process.executableURL = CommandRunner.executable(named: "sluice-stress")
        process.arguments = ["crash-with-helper", pidFile.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The helper shares the crashed process's standard output: reading it to its end
        // returns only once the helper is gone too (it would block for 600 s before).
        let started = Date()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal, "it died")
        #expect(text.hasPrefix("started "))
        #expect(Date().timeIntervalSince(started) < 30)
        let pid = try #require(Int32(String(decoding: try Data(contentsOf: pidFile), as: UTF8.self)))
        // Gone (its parent, init, reaps it a moment after it is killed).
        let deadline = Date().addingTimeInterval(5)
        while kill(pid, 0) == 0, Date() < deadline { usleep(10_000) }
        #expect(kill(pid, 0) != 0, "the helper \(pid) still runs")
    }

    /// The watchdog holds no descriptor of the test process but its standard streams (on
    /// /dev/null): one it held was a socket through which Foundation learns that a child it
    /// spawned exited, and that child's `waitUntilExit` never returned (a CI run hung).
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/fd"), "reads /proc (Linux)"))
    func theWatchdogHoldsNoDescriptorOfTheTests() throws {
        // A descriptor open while the watchdog may start (no close-on-exec, as a socket pair
        // Foundation makes for a child is).
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { pair.forEach { close($0) } }
        let pid = try #require(TestWatchdog.processID)
        // What each descriptor is open on (`socket:[inode]`, `pipe:[inode]`, a path).
        func targets(_ pid: String) throws -> [Int32: String] {
            var found: [Int32: String] = [:]
            for entry in try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") {
                guard let descriptor = Int32(entry), let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(entry)") else { continue }
                found[descriptor] = target
            }
            return found
        }
        // The shell's own (a command substitution's pipe) may come and go; none may be one
        // of this process's open files.
        let ours = Set(try targets("self").values).subtracting(["/dev/null"])
        let shared = try targets("\(pid)").filter { ours.contains($0.value) }
        #expect(shared.isEmpty, "the watchdog \(pid) holds the test process's \(shared.sorted { $0.key < $1.key })")
    }
}
