import Foundation
import SluiceTestSupport
import Testing

/// `sluice history`, `track` and `untrack` through the built binary.
@Suite(.timeLimit(.minutes(10))) struct HistoryCommandTests {
    /// A file whose change-log pages are damaged is said to be damaged, with
    /// the table, not to have no change log; the file is left as it was.
    @Test func historyOfADamagedLogSaysWhatIsDamaged() throws {
        let cli = CommandRunner()
        #expect(try cli.run(["seed", "--demo", "--people", "300"]).status == 0)
        let path = cli.path("sluice.sqlite")
        let plain = PlainConnection(path: path)
        try plain.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        let pages = try plain.rows("SELECT name, pageno FROM dbstat WHERE name IN ('sluice_transaction', 'sluice_change') AND pagetype = 'leaf' ORDER BY pageno")
        let pageSize = Int(try plain.rows("PRAGMA page_size").first.flatMap { Int64(sqliteValue: $0[0]) } ?? 4_096)
        for (table, offset) in [("sluice_change", 2), ("sluice_transaction", 0)] {
            let page = try #require(pages.filter { String(sqliteValue: $0[0]) == table }.dropFirst(offset).first.flatMap { Int(sqliteValue: $0[1]) })
            let copy = cli.path("\(table).sqlite")
            try? FileManager.default.removeItem(atPath: copy)
            try FileManager.default.copyItem(atPath: path, toPath: copy)
            let file = try #require(FileHandle(forUpdatingAtPath: copy))
            try file.seek(toOffset: UInt64((page - 1) * pageSize))
            file.write(Data(repeating: 0xA5, count: pageSize))
            try file.close()
            let before = try Data(contentsOf: URL(fileURLWithPath: copy))
            let history = try cli.run(["history", "--db", copy])
            #expect(history.status != 0)
            #expect(history.stderr.contains("change log of") && history.stderr.contains("damaged") && history.stderr.contains(table), "\(history)")
            #expect(!history.stderr.contains("has no change log"), "\(history)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: copy)) == before)
        }
    }

    @Test func historyPrintsEveryWritersTransactionsAsJSONLines() throws {
        let cli = CommandRunner()
        #expect(try cli.run(["migrate"]).status == 0)
        let tracked = try cli.run(["track", "person"])
        #expect(tracked.status == 0 && tracked.stdout.contains("tracking person"), "\(tracked.stderr)")
        try cli.write("one.json", #"[{"id": 5, "first_name": "Ana", "last_name": "Kim", "age": 30}]"#)
        #expect(try cli.run(["seed", "one.json", "--table", "person"]).status == 0)
        try WatchCommandTests.shell(cli, "UPDATE person SET age = 31 WHERE id = 5;")
        try WatchCommandTests.shell(cli, "DELETE FROM person WHERE id = 5;")

        let history = try cli.run(["history", "--table", "person", "--format", "json"])
        #expect(history.status == 0, "\(history.stderr)")
        let lines = history.stdout.split(separator: "\n").map { WatchCommandTests.json(String($0)) }
        #expect(lines.count == 3)
        let changes = lines.map { ($0["changes"] as? [[String: Any]]) ?? [] }
        #expect(lines.first?["author"] as? String == "cli")
        #expect(changes[0].first?["op"] as? String == "insert" && changes[0].first?["id"] as? Int == 5)
        #expect((changes[0].first?["new"] as? [String: Any])?["first_name"] as? String == "Ana")
        #expect(changes[0].first?["old"] == nil)
        #expect(changes[1].first?["op"] as? String == "update")
        #expect((changes[1].first?["old"] as? [String: Any])?.keys.sorted() == ["age"])
        #expect((changes[1].first?["old"] as? [String: Any])?["age"] as? Int == 30)
        #expect((changes[1].first?["new"] as? [String: Any])?["age"] as? Int == 31)
        #expect(changes[2].first?["op"] as? String == "delete" && changes[2].first?["new"] == nil)
        #expect((changes[2].first?["old"] as? [String: Any])?["last_name"] as? String == "Kim")

        // --since a printed token: only what came after.
        let token = try #require(lines[1]["token"] as? String)
        let after = try cli.run(["history", "--since", token, "--format", "json"])
        #expect(after.stdout.split(separator: "\n").count == 1)

        // --last N: only the newest N.
        let newest = try cli.run(["history", "--table", "person", "--last", "2", "--format", "json"])
        #expect(newest.stdout.split(separator: "\n").map { WatchCommandTests.json(String($0))["token"] as? String }
                == lines.suffix(2).map { $0["token"] as? String })

        // untrack: the shell is no longer logged.
        #expect(try cli.run(["untrack"]).stdout.contains("untracked person"))
        try WatchCommandTests.shell(cli, "INSERT INTO person (id, first_name, last_name) VALUES (6, 'Bo', 'Li');")
        #expect(try cli.run(["history", "--since", token, "--format", "json"]).stdout.split(separator: "\n").count == 1)
    }

    @Test func followPrintsNewTransactionsFromOtherProcesses() throws {
        let cli = CommandRunner()
        #expect(try cli.run(["migrate"]).status == 0)
        #expect(try cli.run(["track", "person"]).status == 0)
        let follow = try cli.start(["history", "--follow", "--format", "json"])
        try WatchCommandTests.shell(cli, "INSERT INTO person (id, first_name, last_name) VALUES (1, 'Zoë', 'Ng');")
        // First what is there (the demo migration's app_state row), then the shell's insert.
        let existing = WatchCommandTests.json(follow.nextLine())
        #expect((existing["changes"] as? [[String: Any]])?.first?["table"] as? String == "app_state")
        let line = WatchCommandTests.json(follow.nextLine())
        let change = (line["changes"] as? [[String: Any]])?.first
        #expect(change?["table"] as? String == "person" && change?["op"] as? String == "insert")
        follow.interrupt()
    }

    @Test func badTokensAndTablesAreClearErrors() throws {
        let cli = CommandRunner()
        #expect(try cli.run(["migrate"]).status == 0)
        let malformed = try cli.run(["history", "--since", "yesterday"])
        #expect(malformed.status != 0 && malformed.stderr.contains("not a history token"), "\(malformed.stderr)")
        // The subcommand's usage, not the root's.
        #expect(malformed.stderr.contains("Usage: sluice history"), "\(malformed.stderr)")
        let last = try cli.run(["history", "--last", "0"])
        #expect(last.status != 0 && last.stderr.contains("--last takes a count"), "\(last.stderr)")
        // The help says which writers are logged.
        #expect(try cli.run(["history", "--help"]).stdout.contains("sluice track"))
        let foreign = try cli.run(["history", "--since", "abcdef-1"])
        #expect(foreign.status != 0 && foreign.stderr.contains("another database"), "\(foreign.stderr)")
        let table = try cli.run(["history", "--table", "nope"])
        #expect(table.status != 0 && table.stderr.contains("unknown table 'nope'"), "\(table.stderr)")
        let track = try cli.run(["track", "nope"])
        #expect(track.status != 0 && track.stderr.contains("unknown table 'nope'"), "\(track.stderr)")
    }
}
