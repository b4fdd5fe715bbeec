import Foundation
import SluiceTestSupport
import Testing

/// `sluice watch` end to end: another process writes, the watcher prints.
@Suite(.timeLimit(.minutes(10))) struct WatchCommandTests {
    static func json(_ line: String?) -> [String: Any] {
        guard let line, let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return [:] }
        return object
    }

    static func shell(_ cli: CommandRunner, _ sql: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = ["-cmd", ".timeout 5000", cli.path("sluice.sqlite"), sql]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    @Test func watchPrintsOneJSONLinePerCommitOfOtherProcesses() throws {
        let cli = CommandRunner()
        #expect(try cli.run(["migrate"]).status == 0)
        let watch = try cli.start(["watch", "person", "--where", "age >= 18", "--order", "first_name", "--format", "json"])
        #expect(watch.nextLine() == #"{"kind":"initial","rows":[]}"#)

        try Self.shell(cli, "INSERT INTO person (id, first_name, last_name, age) VALUES (1, 'Zoë', 'Ng', 30), (2, 'Ana', 'Kim', 40), (3, 'Kid', 'X', 5);")
        let first = Self.json(watch.nextLine())
        #expect(first["kind"] as? String == "update")
        #expect(first["insertions"] as? [Int] == [0, 1])
        #expect((first["inserted"] as? [[String: Any]])?.compactMap { $0["first_name"] as? String } == ["Ana", "Zoë"])

        // One transaction: two autocommit statements would be two commits,
        // and the watcher may print them as two changesets.
        try Self.shell(cli, "BEGIN; UPDATE person SET first_name = 'Bea' WHERE id = 1; UPDATE person SET age = 20 WHERE id = 3; COMMIT;")
        let second = Self.json(watch.nextLine())
        #expect(second["insertions"] as? [Int] == [2])
        #expect(second["modifications"] as? [Int] == [1])
        #expect(second["modificationsNew"] as? [Int] == [1])
        #expect((second["modified"] as? [[String: Any]])?.first?["first_name"] as? String == "Bea")
        #expect((second["inserted"] as? [[String: Any]])?.first?["age"] as? Int == 20)

        // Another sluice process writes too.
        try cli.write("more.json", #"[{"id": 4, "first_name": "Aaron", "last_name": "Z", "age": 50}]"#)
        #expect(try cli.run(["seed", "more.json", "--table", "person"]).status == 0)
        let third = Self.json(watch.nextLine())
        #expect(third["insertions"] as? [Int] == [0])

        try Self.shell(cli, "UPDATE person SET first_name = 'Zed' WHERE id = 4;")
        let fourth = Self.json(watch.nextLine())
        #expect(fourth["deletions"] as? [Int] == [0])
        #expect(fourth["insertions"] as? [Int] == [3])
        #expect(fourth["moves"] as? [[Int]] == [[0, 3]])
        #expect(fourth["deleted"] as? [[String: Int]] == [["id": 4]], "the key of the row at each deleted index")

        try Self.shell(cli, "UPDATE person SET last_name = last_name;")     // changes nothing visible
        try Self.shell(cli, "DELETE FROM person WHERE id = 2;")
        let fifth = Self.json(watch.nextLine())
        #expect(fifth["deletions"] as? [Int] == [0], "the no-op commit printed nothing")
        #expect(fifth["deleted"] as? [[String: Int]] == [["id": 2]])
        watch.interrupt()
    }

    /// A window of the ordered rows: indices in the window, rows entering and leaving at its edges, the offset and total beside.
    @Test func watchFollowsAWindowOfTheRows() throws {
        let cli = CommandRunner()
        #expect(try cli.run(["migrate"]).status == 0)
        try Self.shell(cli, "INSERT INTO person (id, first_name, last_name, age) VALUES " + (1...10).map { "(\($0), 'p\($0)', 'X', \($0 * 10))" }.joined(separator: ", ") + ";")
        let watch = try cli.start(["watch", "person", "--order", "age", "--limit", "3", "--offset", "2", "--format", "json"])
        let initial = Self.json(watch.nextLine())
        #expect((initial["rows"] as? [[String: Any]])?.compactMap { $0["id"] as? Int } == [3, 4, 5])
        #expect(initial["offset"] as? Int == 2)
        let counted = Self.json(watch.nextLine())
        #expect(counted["insertions"] as? [Int] == [])
        #expect(counted["total"] as? Int == 10)

        // A row leaves before the window: the window stays at row 2 and moves one row on.
        try Self.shell(cli, "DELETE FROM person WHERE id = 1;")
        let shifted = Self.json(watch.nextLine())
        #expect(shifted["deletions"] as? [Int] == [0])
        #expect(shifted["insertions"] as? [Int] == [2])
        #expect((shifted["inserted"] as? [[String: Any]])?.first?["id"] as? Int == 6)
        #expect(shifted["deleted"] as? [[String: Int]] == [["id": 3]])
        #expect(shifted["total"] as? Int == 9)

        // A row after the window: only the total changes.
        try Self.shell(cli, "INSERT INTO person (id, first_name, last_name, age) VALUES (11, 'p11', 'X', 500);")
        let counted2 = Self.json(watch.nextLine())
        #expect(counted2["deletions"] as? [Int] == [])
        #expect(counted2["total"] as? Int == 10)
        watch.interrupt()

        #expect(try cli.run(["watch", "person", "--offset", "2"]).status != 0, "--offset without --limit")
        #expect(try cli.run(["watch", "person", "--limit", "0"]).status != 0)
    }

    @Test func watchSectionByPrintsSectionChanges() throws {
        let cli = CommandRunner()
        #expect(try cli.run(["migrate"]).status == 0)
        try Self.shell(cli, "INSERT INTO person (id, first_name, last_name, city) VALUES (1, 'Ann', 'X', 'Oslo'), (2, 'Bob', 'X', 'Rome');")
        let watch = try cli.start(["watch", "person", "--section-by", "city", "--order", "first_name", "--format", "json"])
        let initial = Self.json(watch.nextLine())
        let sections = initial["sections"] as? [[String: Any]]
        #expect(sections?.compactMap { $0["key"] as? String } == ["Oslo", "Rome"])

        // A new section in the middle, and Bob's section emptied.
        try Self.shell(cli, "BEGIN; INSERT INTO person (id, first_name, last_name, city) VALUES (3, 'Cid', 'X', 'Paris'); "
                       + "UPDATE person SET city = 'Oslo' WHERE id = 2; COMMIT;")
        let update = Self.json(watch.nextLine())
        #expect(update["sectionsToDelete"] as? [Int] == [1])
        #expect(update["sectionsToInsert"] as? [Int] == [1])
        #expect(update["insertions"] as? [[Int]] == [[0, 1]])
        #expect((update["insertedSections"] as? [[String: Any]])?.first?["key"] as? String == "Paris")
        #expect((update["inserted"] as? [[String: Any]])?.first?["first_name"] as? String == "Bob")
        watch.interrupt()

        let bad = try cli.run(["watch", "person", "--section-by", "town"])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("unknown column 'town'"), "\(bad.stderr)")
    }

    @Test func watchRefusesTablesItCannotFollow() throws {
        let cli = CommandRunner()
        #expect(try cli.run(["migrate"]).status == 0)
        try Self.shell(cli, "CREATE TABLE pair (a TEXT, b TEXT, PRIMARY KEY (a, b)) WITHOUT ROWID;")
        let refused = try cli.run(["watch", "pair", "--format", "json"])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("cannot observe pair"), "\(refused.stderr)")
        #expect(refused.stderr.contains("WITHOUT ROWID"), "\(refused.stderr)")
    }

    @Test func watchRejectsBadInputLikeQuery() throws {
        let cli = CommandRunner()
        #expect(try cli.run(["migrate"]).status == 0)
        let bad = try cli.run(["watch", "person", "--where", "age >"])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("expected a value after '>'"))
        let missing = try cli.run(["watch", "person", "--db", "nope.sqlite"])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("no database at nope.sqlite"))
        #expect(!FileManager.default.fileExists(atPath: cli.path("nope.sqlite")))
    }
}
