import Foundation
#if canImport(Glibc)
import Glibc
#endif
import SluiceTestSupport
import Testing

/// `sluice demo` end to end in a real terminal (tmux), driven by typed
/// commands and by another process writing to the database.
@Suite(.timeLimit(.minutes(10))) struct DemoCommandTests {
    /// A tmux server of its own, with one session running a command.
    final class TmuxSession {
        let socket = "sluice-test-\(UUID().uuidString.prefix(8))"
        static let executable = ["/usr/bin/tmux", "/usr/local/bin/tmux", "/opt/homebrew/bin/tmux"].first { FileManager.default.isExecutableFile(atPath: $0) }

        /// Runs a tmux command; only `capture` reads its output (a server
        /// started by `new-session` would keep a pipe open forever).
        @discardableResult
        func tmux(_ arguments: [String], capture: Bool = false) throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.executable ?? "/usr/bin/tmux")
            process.arguments = ["-L", socket] + arguments
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            guard capture else {
                // Foundation's Process waits for a descriptor that the tmux
                // server (forked by new-session) inherits: spawn and reap
                // the client directly instead.
                let argv = [Self.executable ?? "/usr/bin/tmux", "-L", socket] + arguments
                var pid: pid_t = 0
                var cArguments = argv.map { strdup($0) } + [nil]
                defer { cArguments.forEach { free($0) } }
                guard posix_spawn(&pid, argv[0], nil, nil, &cArguments, environ) == 0 else { return "" }
                var status: Int32 = 0
                waitpid(pid, &status, 0)
                return ""
            }
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }

        func start(_ command: String) throws {
            try tmux(["new-session", "-d", "-s", "demo", "-x", "110", "-y", "40", command])
        }

        func type(_ text: String) throws {
            try tmux(["send-keys", "-t", "demo", "-l", text])
            try tmux(["send-keys", "-t", "demo", "Enter"])
        }

        func screen() throws -> String { try tmux(["capture-pane", "-p", "-t", "demo"], capture: true) }

        /// Waits until the screen shows `text`.
        func waitFor(_ text: String, timeout: TimeInterval = 10) throws -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if try screen().contains(text) { return true }
                usleep(20_000)
            }
            return false
        }

        deinit { _ = try? tmux(["kill-server"]) }
    }

    /// A command's message stays until the next command, or until a change from elsewhere
    /// redraws the screen it described.
    @Test(.enabled(if: TmuxSession.executable != nil, "needs tmux"))
    func aCommandsMessageGoesWhenAChangeFromElsewhereRedraws() throws {
        let cli = CommandRunner()
        let database = cli.path("demo.sqlite")
        let session = TmuxSession()
        try session.start("'\(CommandRunner.binary.path)' demo --db '\(database)' --people 3")
        #expect(try session.waitFor("Sluice demo · people (3)"), "\((try? session.screen()) ?? "")")
        try session.type("delete 5")
        let message = "delete needs a row number from the list: 1 to 3, not 5"
        #expect(try session.waitFor(message), "\((try? session.screen()) ?? "")")
        Thread.sleep(forTimeInterval: 1.5)
        #expect(try session.screen().contains(message))
        try SQLiteShell.run(path: database, "INSERT INTO person (first_name, last_name) VALUES ('Aaron', 'FromShell')")
        #expect(try session.waitFor("1. Aaron FromShell"), "\((try? session.screen()) ?? "")")
        #expect(try !session.screen().contains(message), "\((try? session.screen()) ?? "")")
        try session.type("quit")
    }

    @Test(.enabled(if: TmuxSession.executable != nil, "needs tmux"))
    func demoRedrawsForTypedCommandsAndOtherProcesses() throws {
        let cli = CommandRunner()
        let database = cli.path("demo.sqlite")
        let session = TmuxSession()
        try session.start("env SLUICE_DEMO_REPLY_MS=300 '\(CommandRunner.binary.path)' demo --db '\(database)' --people 5")
        #expect(try session.waitFor("Sluice demo · people (5)"), "\((try? session.screen()) ?? "")")

        try session.type("add Zoë Ødegaard")
        #expect(try session.waitFor("Zoë Ødegaard"))
        #expect(try session.waitFor("people (6)"))

        // Another process writes: the list redraws without any key press.
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        shell.arguments = ["-cmd", ".timeout 5000", database, "INSERT INTO person (first_name, last_name) VALUES ('Aaron', 'FromShell')"]
        try shell.run()
        shell.waitUntilExit()
        #expect(try session.waitFor("1. Aaron FromShell"), "\((try? session.screen()) ?? "")")

        try session.type("search zoë")
        #expect(try session.waitFor("people (1) matching \"zoë\""))

        try session.type("package")
        #expect(try session.waitFor("Sluice demo · package editor"))
        try session.type("first Zed")
        #expect(try session.waitFor("Recipient: Zed"))
        try session.type("item")
        #expect(try session.waitFor("Contents:"))

        // The friend who answers is the conversation's own (the demo data's), and a new conversation's is "Friend".
        let partner = try cli.run(["query", "message", "--db", database, "--where", "conversation_id == 1 AND sender != 'me'", "--limit", "1", "--format", "csv"])
        let friend = try #require(partner.stdout.split(separator: "\n").dropFirst().first?.split(separator: ",").dropFirst(2).first.map(String.init))
        try session.type("chat 1")
        #expect(try session.waitFor("chat with \(friend)"))
        try session.type("send Hello from tmux")
        #expect(try session.waitFor("me: Hello from tmux"))
        #expect(try session.waitFor("\(friend): You said: Hello from tmux", timeout: 10), "\((try? session.screen()) ?? "")")
        try session.type("chat 42")
        try session.type("send Hi")
        #expect(try session.waitFor("Friend: You said: Hi", timeout: 10))

        try session.type("quit")
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, (try? session.tmux(["has-session", "-t", "demo"])) != nil, (try session.screen()).contains("Sluice demo") {
            usleep(20_000)
        }
        // The writes went to the store.
        let query = try cli.run(["query", "person", "--where", "first_name == 'Zed' OR last_name == 'FromShell'", "--db", database, "--format", "json"])
        #expect(query.stdout.contains("\"first_name\":\"Zed\"") && query.stdout.contains("FromShell"))
    }
}
