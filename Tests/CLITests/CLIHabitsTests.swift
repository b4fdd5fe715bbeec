import CSV
import Foundation
import SluiceTestSupport
import Testing

/// `sluice` as people type it and at scale, through the built binary:
/// options before the command, streamed output, display widths, clear
/// messages for what is wrong.
@Suite(.timeLimit(.minutes(10))) struct CLIHabitsTests {
    static func seededWithNames() throws -> CommandRunner {
        let cli = CommandRunner()
        #expect(try cli.run(["migrate"]).status == 0)
        try cli.write("people.json", """
            {"person": [
              {"id": 1, "first_name": "李", "last_name": "小龙", "age": 32, "city": "香港"},
              {"id": 2, "first_name": "Zoë", "last_name": "O'Brien", "age": 31, "city": "Oslo 👍"},
              {"id": 3, "first_name": "José", "last_name": "Garcia", "age": 40, "city": "Cafe\\u0301"}
            ]}
            """)
        #expect(try cli.run(["seed", "people.json"]).status == 0)
        return cli
    }

    // MARK: - Options where people put them

    @Test func dbAndFormatMayComeBeforeTheCommand() throws {
        let cli = try Self.seededWithNames()
        try cli.write("other.json", #"{"person": [{"id": 9, "first_name": "Other", "last_name": "File"}]}"#)
        #expect(try cli.run(["--db", "second.sqlite", "migrate"]).status == 0)
        #expect(try cli.run(["--db=second.sqlite", "seed", "other.json"]).status == 0)
        let before = try cli.run(["--db", "second.sqlite", "query", "person", "--format", "json"])
        let after = try cli.run(["query", "person", "--db", "second.sqlite", "--format", "json"])
        let formatFirst = try cli.run(["--format", "json", "--db", "second.sqlite", "query", "person"])
        #expect(before.status == 0 && before.stdout.contains("\"first_name\":\"Other\""), "\(before)")
        #expect(after.stdout == before.stdout && formatFirst.stdout == before.stdout)
        // --format where it does not apply, or with no command, is a clear error.
        let misplaced = try cli.run(["--format", "json", "migrate"])
        #expect(misplaced.status != 0 && misplaced.stderr.contains("--format does not apply to `sluice migrate`"), "\(misplaced)")
        let alone = try cli.run(["--db", "x.sqlite"])
        #expect(alone.status != 0 && alone.stderr.contains("goes with a command"), "\(alone)")
        #expect(!FileManager.default.fileExists(atPath: cli.path("x.sqlite")))
    }

    @Test func versionNamesSluiceAndSQLite() throws {
        let result = try CommandRunner().run(["--version"])
        #expect(result.status == 0)
        // 0.7: the modules were renamed (Store → Sluice, ViewModels → SluiceViewModels), as the README says.
        #expect(result.stdout.hasPrefix("sluice 0.7.") && result.stdout.contains("(SQLite 3."), "\(result)")
    }

    @Test func negativeNumbersAreSaidToBeNotPositive() throws {
        let cli = try Self.seededWithNames()
        let limit = try SluiceCommandTests.expectFailure(cli, ["query", "person", "--limit", "-1"])
        #expect(limit.contains("--limit must be a positive number, got -1"), "\(limit)")
        let people = try SluiceCommandTests.expectFailure(cli, ["seed", "--demo", "--people", "-5"])
        #expect(people.contains("--people must be a positive number, got -5"), "\(people)")
    }

    // MARK: - Streaming output

    /// csv and json are written as rows are read; what they write is the
    /// table's rows exactly (CSV read back with CSV.swift, JSON with
    /// JSONSerialization), for more rows than the output buffer holds.
    @Test func csvAndJSONStreamEveryRowExactly() throws {
        let cli = try Self.seededWithNames()
        try cli.write("odd.json", #"{"person": [{"id": 4, "first_name": "Q\"uo\\te\n\t\u0001é", "last_name": "x,y"}]}"#)
        #expect(try cli.run(["seed", "odd.json"]).status == 0)
        #expect(try cli.run(["seed", "--demo", "--people", "3000"]).status == 0)
        let json = try cli.run(["query", "person", "--order", "id", "--format", "json"])
        #expect(json.status == 0)
        let objects = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(objects.count == 3004)
        #expect(objects[3]["first_name"] as? String == "Q\"uo\\te\n\t\u{1}é" && objects[3]["last_name"] as? String == "x,y")
        #expect(objects[0]["first_name"] as? String == "李" && objects[1]["last_name"] as? String == "O'Brien")
        #expect(objects[2]["city"] as? String == "Cafe\u{301}")
        let csv = try cli.run(["query", "person", "--order", "id", "--format", "csv"])
        let reader = try CSVReader(string: csv.stdout, hasHeaderRow: true)
        #expect(reader.headerRow == ["id", "first_name", "last_name", "age", "email", "street", "city", "postal_code", "country"])
        var records: [[String]] = []
        while let record = reader.next() { records.append(record) }
        #expect(records.count == 3004)
        #expect(records[3][1] == "Q\"uo\\te\n\t\u{1}é" && records[3][2] == "x,y")
        for (record, object) in zip(records, objects) {
            #expect(record[0] == "\(object["id"] as? Int ?? -1)")
            #expect(record[1] == object["first_name"] as? String && record[6] == (object["city"] as? String ?? ""))
        }
        // A table format longer than its look-ahead keeps its widths and counts every row.
        let table = try cli.run(["query", "person", "--order", "id"])
        let lines = table.stdout.split(separator: "\n")
        #expect(lines.count == 3004 + 3 && lines.last == "(3004 rows)")
        #expect(try cli.run(["query", "person", "--where", "age > 1000", "--format", "json"]).stdout == "[]\n")
    }

    /// Chinese characters and emoji take two columns, combining marks none:
    /// every line of the table is as wide as the header.
    @Test func tableCellsAreAlignedByDisplayWidth() throws {
        let cli = try Self.seededWithNames()
        let result = try cli.run(["query", "person", "--order", "id"])
        let lines = result.stdout.split(separator: "\n").dropLast().map(String.init)
        #expect(lines.count == 5, "\(result)")
        func width(_ line: String) -> Int {
            line.reduce(0) { total, character in
                let scalar = character.unicodeScalars.first?.value ?? 0
                let wide = (0x4E00...0x9FFF).contains(scalar) || character.unicodeScalars.contains { $0.properties.isEmojiPresentation }
                return total + (wide ? 2 : 1)
            }
        }
        #expect(Set(lines.map(width)).count == 1, "\(lines.map(width))\n\(result.stdout)")
        #expect(lines[2].contains("李 ") && lines[3].contains("Oslo 👍"))
        // The column "city": 香港 (4 columns) sets the width next to "Oslo 👍" (7).
        let cityCells = lines.dropFirst(2).map { $0.components(separatedBy: " │ ")[6] }
        #expect(cityCells.map(width).allSatisfy { $0 == 7 }, "\(cityCells)")
    }

    // MARK: - Query strings

    @Test func textComparedWithANumberColumnIsRefusedWithACaret() throws {
        let cli = try Self.seededWithNames()
        let error = try SluiceCommandTests.expectFailure(cli, ["query", "person", "--where", "age > 'thirty'"])
        #expect(error.contains("cannot compare the integer column 'age' with the text 'thirty'"), "\(error)")
        #expect(error.contains("    age > 'thirty'\n    ^"), "\(error)")
        // Text that is a number is converted by the column's affinity, as SQLite does.
        #expect(try cli.run(["query", "person", "--where", "age > '31'", "--format", "csv"]).stdout.split(separator: "\n").count == 3)
    }

    @Test func doubledQuotesAndBacktickNamesAreAccepted() throws {
        let cli = try Self.seededWithNames()
        let quoted = try cli.run(["query", "person", "--where", "last_name = 'O''Brien'", "--format", "csv"])
        #expect(quoted.status == 0 && quoted.stdout.contains("Zoë,O'Brien"), "\(quoted)")
        let escaped = try cli.run(["query", "person", "--where", #"last_name = 'O\'Brien'"#, "--format", "csv"])
        #expect(escaped.stdout == quoted.stdout)
        // A column whose name has a space, in --where and --order.
        let plain = PlainDatabase(path: cli.path("sluice.sqlite"))
        try plain.execute("CREATE TABLE note (id INTEGER PRIMARY KEY, `first name` TEXT, `due day` INTEGER); INSERT INTO note VALUES (1, 'b', 2), (2, 'a', 1), (3, 'c', 3)")
        let spaced = try cli.run(["query", "note", "--where", "`first name` != 'c'", "--order", "`due day` DESC", "--format", "csv"])
        #expect(spaced.stdout == "id,first name,due day\n1,b,2\n2,a,1\n", "\(spaced)")
        let grammar = try SluiceCommandTests.expectFailure(cli, ["query", "person", "--where", "last_name = 'O' 'Brien'"])
        #expect(grammar.contains("expected AND, OR or the end of the query, found the string 'Brien'"), "\(grammar)")
    }

    @Test func bookkeepingTablesCanBeQueried() throws {
        let cli = try Self.seededWithNames()
        let migrations = try cli.run(["query", "sluice_migration", "--format", "csv"])
        #expect(migrations.status == 0 && migrations.stdout.hasPrefix("version,name,checksum,applied_at\n1,create_person,"), "\(migrations)")
        let log = try cli.run(["query", "sluice_transaction", "--format", "json"])
        #expect(log.status == 0 && log.stdout.contains("\"author\":\"cli\""), "\(log)")
    }

    // MARK: - migrate and seed

    @Test func aDifferentSetOfMigrationsIsNamedAsSuch() throws {
        let cli = try Self.seededWithNames()
        try FileManager.default.createDirectory(atPath: cli.path("notes"), withIntermediateDirectories: true)
        try cli.write("notes/001_create_note.sql", "CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT);")
        let error = try SluiceCommandTests.expectFailure(cli, ["migrate", "--dir", "notes"])
        #expect(error.contains("a different set of migrations: it has applied 001_create_person, 002_create_package"), "\(error)")
        #expect(error.contains("the migrations given are 001_create_note"), "\(error)")
        #expect(!error.contains("was changed after it was applied"))
    }

    @Test func seedWithoutTableShowsSeedsUsage() throws {
        let cli = try Self.seededWithNames()
        try cli.write("p.csv", "first_name,last_name\nA,B\n")
        let error = try SluiceCommandTests.expectFailure(cli, ["seed", "p.csv"])
        #expect(error.contains("a CSV file needs --table TABLE"), "\(error)")
        #expect(error.contains("Usage: sluice seed"), "\(error)")
    }

    @Test func seedDemoSaysItAddsAndResetReplaces() throws {
        let cli = CommandRunner()
        #expect(try cli.run(["seed", "--demo", "--people", "20"]).status == 0)
        let again = try cli.run(["seed", "--demo", "--people", "20"])
        #expect(again.stdout.contains("already had 20 people; the demo data (seed 62) was added to them (--reset replaces them instead)"), "\(again)")
        let people = try cli.run(["query", "person", "--format", "csv"]).stdout.split(separator: "\n")
        #expect(people.count == 41)
        // Other people, not copies of the first twenty (the same seed made the same ones).
        let names = people.dropFirst().map { $0.split(separator: ",").dropFirst().prefix(3).joined(separator: ",") }
        #expect(Set(names.prefix(20)) != Set(names.suffix(20)), "\(names)")
        let reset = try cli.run(["seed", "--demo", "--people", "5", "--reset"])
        #expect(reset.status == 0 && reset.stdout.contains("deleted the 40 people"), "\(reset)")
        #expect(try cli.run(["query", "person", "--format", "csv"]).stdout.split(separator: "\n").count == 6)
        #expect(try cli.run(["seed", "p.json", "--reset"]).stderr.contains("--reset goes with --demo"))
    }

    // MARK: - The demo with piped input

    @Test func pipedDemoShowsThePeopleAndConfirmsAddsHiddenBySearch() throws {
        let cli = CommandRunner()
        let result = try cli.run(["demo", "--people", "12"], input: "search zzzz\nadd Ada Lovelace\nsearch\nquit\n")
        #expect(result.status == 0, "\(result)")
        let frames = result.stdout.components(separatedBy: "\n---\n").filter { !$0.isEmpty }
        #expect(frames.first?.contains("people (12)") == true, "the first frame already has the people: \(frames.first ?? "")")
        #expect(result.stdout.contains("added Ada Lovelace (not in this list: the search \"zzzz\" hides them"), "\(result.stdout)")
        #expect(frames.last?.contains("people (13)") == true, "\(frames.last ?? "")")
    }

    @Test func pipedDemoSaysWhichRowsCanBeDeleted() throws {
        let cli = CommandRunner()
        let result = try cli.run(["demo", "--people", "3"], input: "delete 5\ndelete\nquit\n")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("delete needs a row number from the list: 1 to 3, not 5"), "\(result.stdout)")
        #expect(result.stdout.contains("delete needs a row number from the list: 1 to 3\n"), "\(result.stdout)")
    }
}

/// A plain SQLite connection through the shell, for schema the CLI does not make.
struct PlainDatabase {
    let path: String

    func execute(_ sql: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = [path, sql]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
    }
}
