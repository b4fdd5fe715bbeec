import Foundation
import SluiceTestProcess
#if canImport(Glibc)
import Glibc
#endif

/// Ends a test process's helpers — services, database servers, child processes — once the
/// test process ends, however it ends. A crashed test process runs no `atexit` handler and
/// no `deinit`: its helpers lived on, holding the test's standard error, so `swift test`
/// waited for ever on the output of a process that was gone. The watchdog is a small
/// shell process started on first use, with its standard streams on `/dev/null`: it waits
/// until the test process has exited (a zombie counts as exited), then kills the processes
/// registered with ``killOnExit(_:)`` and runs the commands registered with
/// ``runOnExit(_:)``. Linux only (it reads `/proc`); elsewhere registering does nothing.
public enum TestWatchdog {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var folder: String?
    nonisolated(unsafe) private static var counter = 0
    nonisolated(unsafe) private static var watchdog: pid_t?

    /// The watchdog's process id, starting it if it is not running yet (nil where it cannot run).
    public static var processID: pid_t? {
        #if os(Linux)
        guard started() != nil else { return nil }
        #endif
        return lock.withLock { watchdog }
    }

    /// Kills `pid` with SIGKILL once this process ends (unless ``forget(_:)`` is called first).
    public static func killOnExit(_ pid: Int32) {
        write("\(pid)", to: "kill.\(pid)")
    }

    /// Drops `pid` from what is killed at exit (it ended already).
    public static func forget(_ pid: Int32) {
        lock.withLock { folder }.map { try? FileManager.default.removeItem(atPath: "\($0)/kill.\(pid)") }
    }

    /// Runs the command (its arguments, no shell) once this process ends.
    public static func runOnExit(_ command: [String]) {
        let quoted = command.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let name = lock.withLock { () -> String in
            counter += 1
            return "run.\(counter)"
        }
        write(quoted, to: name)
    }

    private static func write(_ text: String, to name: String) {
        #if os(Linux)
        guard let folder = started() else { return }
        try? Data(text.utf8).write(to: URL(fileURLWithPath: "\(folder)/\(name)"))
        #endif
    }

    /// The watchdog's folder, starting it on first use (nil when it could not start).
    private static func started() -> String? {
        lock.withLock {
            if let folder { return folder }
            let path = NSTemporaryDirectory() + "sluice-watchdog-\(getpid())"
            guard (try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)) != nil else { return nil }
            let script = """
                while [ -e /proc/\(getpid()) ] && [ "$(cut -d' ' -f3 /proc/\(getpid())/stat 2>/dev/null)" != Z ]; do sleep 0.2; done
                for f in "\(path)"/kill.*; do [ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done
                for f in "\(path)"/run.*; do [ -e "$f" ] && sh "$f" >/dev/null 2>&1; done
                rm -rf "\(path)"
                """
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            for descriptor in Int32(0)...2 {
                posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY, 0)
            }
            // Nothing else of this process's: Foundation learns that a child it spawned
            // exited when the last copy of a socket the child holds closes, and a watchdog
            // spawned while another thread launched a process kept that socket for the whole
            // run, so the other thread's `waitUntilExit` never returned (a clean-clone CI run
            // hung with two tests holding the cooperative pool, one of them waiting on it).
            guard sluice_spawn_close_from(&actions, 3) == 0 else { return nil }
            var pid: pid_t = 0
            let arguments = ["/bin/sh", "-c", script]
            var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
            defer { argv.forEach { free($0) } }
            guard posix_spawn(&pid, "/bin/sh", &actions, nil, &argv, environ) == 0 else { return nil }
            watchdog = pid
            folder = path
            return path
        }
    }
}
