import Foundation
import SluiceDemo
import SluiceTestSupport
import Sluice
import Testing

/// `sluice sync`, `sluice sync status` and the demo following a service, through the built binary.
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncCommandTests {
    /// A store's people as the CLI prints them, without their local ids (a device that
    /// starts from a snapshot numbers its rows in its own order), sorted.
    static func people(_ cli: CommandRunner, _ file: String) throws -> [String] {
        let json = try cli.run(["query", "person", "--db", file, "--format", "json"]).stdout
        let rows = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]] ?? []
        return rows.map { row in row.filter { $0.key != "id" }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",") }.sorted()
    }

    @Test func syncOnceAndStatus() throws {
        let space = try SyncSpace()
        let cli = CommandRunner()
        let server = space.service.url.absoluteString
        #expect(try cli.run(["tour", "--db", "a.sqlite"]).status == 0)
        let before = try cli.run(["sync", "status", "--db", "a.sqlite"])
        #expect(before.stdout.contains("has never been synced"), "\(before)")
        let first = try cli.run(["sync", "--db", "a.sqlite", "--server", server, "--token", space.token])
        #expect(first.status == 0, "\(first)")
        #expect(first.stdout.hasPrefix("synced a.sqlite: pushed 1, pulled 0 transactions; cursor 1"), "\(first)")
        // A new device: the file is created with the demo schema and starts from a snapshot of
        // the rows (every person, package and message of the tour); the token from the environment.
        let second = try cli.run(["sync", "--db", "b.sqlite", "--server", server], environment: ["SLUICE_SYNC_TOKEN": space.token])
        #expect(second.stdout.contains("pushed 0, pulled 0 transactions and ") && second.stdout.contains(" rows as current values; cursor 1"), "\(second)")
        let people = try Self.people(cli, "a.sqlite")
        let pulled = try Self.people(cli, "b.sqlite")
        #expect(!people.isEmpty && pulled == people)
        // Pending until the next sync, then gone (one shell commit: one logged transaction).
        try SQLiteShell.run(path: cli.path("b.sqlite"), "UPDATE person SET city = 'Tromsø' WHERE id IN (1, 2)")
        let pending = try cli.run(["sync", "status", "--db", "b.sqlite"])
        #expect(pending.stdout.contains("pending 1 transaction\n"), "\(pending)")
        #expect(pending.stdout.contains("cursor 1"))
        #expect(try cli.run(["sync", "--db", "b.sqlite", "--server", server, "--token", space.token]).stdout.contains("pushed 1, pulled 0"))
        #expect(try cli.run(["sync", "--db", "a.sqlite", "--server", server, "--token", space.token]).stdout.contains("pushed 0, pulled 1 transaction; cursor 2"))
        let onA = try Self.people(cli, "a.sqlite")
        let onB = try Self.people(cli, "b.sqlite")
        #expect(onA == onB && onA.joined().contains("Tromsø"))
        let after = try cli.run(["sync", "status", "--db", "b.sqlite"])
        #expect(after.stdout.contains("pending 0 transactions") && after.stdout.contains("cursor 2") && !after.stdout.contains("last sync never"), "\(after)")
    }

    /// `sluice sync --table T --subscribe QUERY` syncs the rows a subscription keeps (and
    /// those they point at); the feature options say clearly what is wrong with them.
    @Test func theCLISpeaksPartialSyncAttachmentsAndVersions() throws {
        let space = try SyncSpace()
        let cli = CommandRunner()
        let server = space.service.url.absoluteString
        #expect(try cli.run(["seed", "--demo", "--people", "60", "--db", "a.sqlite"]).status == 0)
        #expect(try cli.run(["sync", "--db", "a.sqlite", "--server", server, "--token", space.token]).status == 0)
        let partial = try cli.run(["sync", "--db", "p.sqlite", "--server", server, "--token", space.token,
                                   "--table", "package", "--subscribe", "recipient.city == 'Oslo'"])
        #expect(partial.status == 0, "\(partial)")
        func count(_ file: String, _ sql: String) throws -> Int {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try #require(SQLiteShell.executable))
            process.arguments = [cli.path(file), sql]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            process.waitUntilExit()
            return Int(String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
        let oslo = "SELECT count(*) FROM package JOIN person ON person.id = package.recipient_id WHERE person.city = 'Oslo'"
        let expected = try count("a.sqlite", oslo)
        let all = try count("a.sqlite", "SELECT count(*) FROM package")
        #expect(expected > 0 && expected < all, "the demo has Oslo's packages and others")
        #expect(try count("p.sqlite", "SELECT count(*) FROM package") == expected)
        #expect(try count("p.sqlite", oslo) == expected, "only Oslo's packages")
        #expect(try count("p.sqlite", "SELECT count(*) FROM message") == 0, "no table it did not subscribe to")
        for (arguments, message) in [
            (["--subscribe", "city == 'Oslo'"], "--subscribe"),
            (["--table", "parcel"], "not a synced table"),
            (["--attachments", "photo"], "is not table.column"),
            (["--lazy"], "--lazy"),
            (["--schema-version", "0"], "--schema-version"),
        ] {
            let run = try cli.run(["sync", "--db", "x.sqlite", "--server", server, "--token", space.token] + arguments)
            #expect(run.status != 0 && run.stderr.contains(message), "\(arguments): \(run)")
            #expect(!FileManager.default.fileExists(atPath: cli.path("x.sqlite")), "nothing made for a bad command")
        }
    }

    @Test func refusedAndUnreachableServicesExitNonZeroAndLeaveNoFile() throws {
        let space = try SyncSpace()
        let cli = CommandRunner()
        let wrong = try cli.run(["sync", "--db", "new.sqlite", "--server", space.service.url.absoluteString, "--token", "slt_wrong"])
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains("refused the token"), "\(wrong)")
        #expect(!FileManager.default.fileExists(atPath: cli.path("new.sqlite")))
        let unreachable = try cli.run(["sync", "--db", "new.sqlite", "--server", "http://127.0.0.1:1", "--token", space.token])
        #expect(unreachable.status == 1)
        #expect(unreachable.stderr.contains("cannot reach the sync service at http://127.0.0.1:1"), "\(unreachable)")
        #expect(!FileManager.default.fileExists(atPath: cli.path("new.sqlite")))
        let noServer = try cli.run(["sync", "--db", "new.sqlite", "--token", space.token])
        #expect(noServer.status != 0 && noServer.stderr.contains("--server URL is missing"), "\(noServer)")
        let badURL = try cli.run(["sync", "--db", "new.sqlite", "--server", "ftp://x", "--token", space.token])
        #expect(badURL.status != 0 && badURL.stderr.contains("is not an http:// or https:// URL"), "\(badURL)")
    }

    /// A new device's file left part-made by a killed `sluice sync` (stopped before the demo's
    /// first migration, or between two of them) is finished by the next run, which then pulls;
    /// a database of someone else's schema is never given the demo's.
    @Test func aDatabaseLeftPartMadeByAKilledRunIsFinished() throws {
        let space = try SyncSpace()
        let cli = CommandRunner()
        let server = space.service.url.absoluteString
        #expect(try cli.run(["tour", "--db", "a.sqlite"]).status == 0)
        #expect(try cli.run(["sync", "--db", "a.sqlite", "--server", server, "--token", space.token]).status == 0)
        let people = try Self.people(cli, "a.sqlite")
        for applied in 0..<DemoSchema.migrations.count {
            let file = "part\(applied).sqlite"
            do {
                let store = try Store(path: cli.path(file))
                try store.migrate(Array(DemoSchema.migrations.prefix(applied)))
            }
            let run = try cli.run(["sync", "--db", file, "--server", server, "--token", space.token])
            // A new device: a snapshot of the rows.
            #expect(run.status == 0 && run.stdout.contains("pushed 0, pulled 0 transactions and "), "\(applied) applied: \(run)")
            let store = try Store(path: cli.path(file))
            #expect(try store.appliedMigrations().map(\.version) == DemoSchema.migrations.map(\.version))
            #expect(try Self.people(cli, file) == people)
        }
        try SQLiteShell.run(path: cli.path("notes.sqlite"), "CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT);")
        let other = try cli.run(["sync", "--db", "notes.sqlite", "--server", server, "--token", space.token])
        #expect(other.status != 0 && other.stderr.contains("unknown table 'person'"), "\(other)")
        let tables = try Store(path: cli.path("notes.sqlite")).read { db in
            try db.fetchRows(sql: "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sluice%' AND name NOT LIKE 'sqlite%'")
                .map { try $0.value("name", as: String.self) }
        }
        #expect(tables == ["note"])
    }

    /// Two terminal demos on two files follow one service: a person added in one appears in the other.
    /// The README's recipe: `sluice-sync serve --throwaway-postgres` prints a token, devices
    /// sync through it, and stopping it removes the server and its folder.
    @Test func aThrowawayPostgresForDevelopment() throws {
        _ = try PostgresCluster.shared()   // PostgreSQL is installed (or the suite is skipped)
        guard !PostgresCluster.external else { return }
        let service = Process()
        service.executableURL = CommandRunner.executable(named: "sluice-sync")
        service.arguments = ["serve", "--demo", "--throwaway-postgres", "--port", "0", "--space", "team"]
        let output = Pipe()
        service.standardOutput = output
        service.standardError = FileHandle.nullDevice
        try service.run()
        defer { if service.isRunning { kill(service.processIdentifier, SIGKILL) } }
        var text = ""
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, !text.contains("listening on ") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        let lines = text.split(separator: "\n").map(String.init)
        let url = try #require(lines.first { $0.hasPrefix("listening on ") }.map { String($0.dropFirst("listening on ".count)) }, "\(text)")
        let token = try #require(lines.firstIndex(of: "token for space 'team':").map { lines[$0 + 1] }, "\(text)")
        let folder = try #require(lines.first { $0.hasPrefix("throwaway PostgreSQL at ") }?
            .split(separator: "(in ").last?.split(separator: ";").first.map(String.init), "\(text)")
        #expect(token.hasPrefix("slt_") && FileManager.default.fileExists(atPath: folder))
        let cli = CommandRunner()
        #expect(try cli.run(["tour", "--db", "a.sqlite"]).status == 0)
        #expect(try cli.run(["sync", "--db", "a.sqlite", "--server", url, "--token", token]).status == 0)
        let second = try cli.run(["sync", "--db", "b.sqlite", "--server", url, "--token", token])
        #expect(second.stdout.contains(" rows as current values"), "\(second)")
        let (onA, onB) = (try Self.people(cli, "a.sqlite"), try Self.people(cli, "b.sqlite"))
        #expect(onA == onB && !onA.isEmpty)
        // Stopped (Ctrl-C), it takes its PostgreSQL with it.
        kill(service.processIdentifier, SIGINT)
        let stopping = Date().addingTimeInterval(30)
        while service.isRunning, Date() < stopping { Thread.sleep(forTimeInterval: 0.05) }
        #expect(!service.isRunning)
        #expect(!FileManager.default.fileExists(atPath: folder), "\(folder) is left behind")
        // Asked for both, it says which to leave out.
        let both = Process()
        both.executableURL = CommandRunner.executable(named: "sluice-sync")
        both.arguments = ["serve", "--demo", "--throwaway-postgres", "--postgres", "postgres://u@127.0.0.1/x"]
        both.standardOutput = FileHandle.nullDevice
        both.standardError = FileHandle.nullDevice
        try both.run()
        both.waitUntilExit()
        #expect(both.terminationStatus != 0)
    }

    /// `serve` names the schema it serves: without `--schema` it refuses to
    /// start unless told `--demo` (a service that synced the demo's tables for
    /// an app with others refused its every push), before it touches PostgreSQL.
    @Test func serveRefusesToStartWithoutASchemaUnlessToldDemo() throws {
        for arguments in [["serve", "--postgres", "postgres://u@127.0.0.1:1/x"],
                          ["serve", "--demo", "--schema", "schema.json", "--postgres", "postgres://u@127.0.0.1:1/x"]] {
            let serve = Process()
            serve.executableURL = CommandRunner.executable(named: "sluice-sync")
            serve.arguments = arguments
            let errors = Pipe()
            serve.standardOutput = FileHandle.nullDevice
            serve.standardError = errors
            try serve.run()
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            serve.waitUntilExit()
            #expect(serve.terminationStatus != 0, "\(arguments)")
            #expect(message.contains("--schema") && message.contains("--demo"), "\(message)")
        }
    }

    @Test func twoDemosFollowOneService() async throws {
        let space = try SyncSpace()
        let cli = CommandRunner()
        func demo(_ file: String) throws -> (Process, FileHandle, URL) {
            let process = Process()
            process.executableURL = CommandRunner.binary
            process.arguments = ["demo", "--db", file, "--sync-server", space.service.url.absoluteString, "--sync-token", space.token]
            process.currentDirectoryURL = cli.directory
            let input = Pipe()
            let output = cli.directory.appendingPathComponent("\(file).out")
            _ = FileManager.default.createFile(atPath: output.path, contents: nil)
            process.standardInput = input
            process.standardOutput = try FileHandle(forWritingTo: output)
            process.standardError = FileHandle.nullDevice
            try process.run()
            return (process, input.fileHandleForWriting, output)
        }
        let (one, typeOne, _) = try demo("one.sqlite")
        let (two, typeTwo, screenTwo) = try demo("two.sqlite")
        defer { [one, two].forEach { if $0.isRunning { $0.terminate() } } }
        typeTwo.write(Data("search Lovelace\n".utf8))
        typeOne.write(Data("add Ada Lovelace\n".utf8))
        // Wait for the state asserted below (the row can be drawn before the synced status).
        func lastFrame(_ screen: String) -> String { screen.components(separatedBy: "\n---\n").last ?? "" }
        let deadline = ContinuousClock.now + .seconds(20)
        var screen = ""
        while ContinuousClock.now < deadline {
            screen = (try? String(contentsOf: screenTwo, encoding: .utf8)) ?? ""
            if lastFrame(screen).contains("1. Ada Lovelace"), screen.contains("sync: synced · pending 0") { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        // The last frame of the second demo shows the person and a synced status.
        let frame = lastFrame(screen)
        #expect(frame.contains("1. Ada Lovelace"), "the second demo's screen: \(frame)")
        #expect(screen.contains("sync: synced · pending 0"), "\(frame)")
        typeOne.write(Data("quit\n".utf8))
        typeTwo.write(Data("quit\n".utf8))
        one.waitUntilExit()
        two.waitUntilExit()
        #expect(one.terminationStatus == 0 && two.terminationStatus == 0)
    }
}
