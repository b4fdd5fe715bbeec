import Foundation
import SluiceTestSupport
import Testing

/// `sluice` end to end, through the built binary.
@Suite(.timeLimit(.minutes(10))) struct SluiceCommandTests {
    /// A runner whose ./sluice.sqlite is migrated and holds two people.
    static func seeded() throws -> CommandRunner {
        let cli = CommandRunner()
        #expect(try cli.run(["migrate"]).status == 0)
        try cli.write("people.json", """
            {"person": [
              {"id": 1, "first_name": "Zoë", "last_name": "Ødegaard", "age": 31, "city": "Oslo"},
              {"id": 2, "first_name": "José", "last_name": "García", "age": null, "email": "jose@example.com"}
            ]}
            """)
        let seeded = try cli.run(["seed", "people.json"])
        #expect(seeded.status == 0, "\(seeded)")
        return cli
    }

    /// Runs a command that must fail, and checks the database did not change.
    static func expectFailure(_ cli: CommandRunner, _ arguments: [String], database: String = "sluice.sqlite",
                              sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let path = cli.path(database)
        let before = try dump(path: path)
        let result = try cli.run(arguments)
        #expect(result.status != 0, "\(result)", sourceLocation: sourceLocation)
        #expect(result.stdout.isEmpty, "nothing on stdout: \(result)", sourceLocation: sourceLocation)
        #expect(try dump(path: path) == before, "the database is unchanged", sourceLocation: sourceLocation)
        return result.stderr
    }

    // MARK: - migrate

    @Test func migrateAppliesTheDemoSchemaOnce() throws {
        let cli = CommandRunner()
        let first = try cli.run(["migrate"])
        #expect(first.status == 0)
        #expect(first.stdout == """
            applied 001_create_person
            applied 002_create_package
            applied 003_create_message
            applied 004_create_app_state
            applied 005_full_text_person
            sluice.sqlite is now at migration 005_full_text_person.

            """)
        let second = try cli.run(["migrate"])
        #expect(second.stdout == "sluice.sqlite is up to date (migration 005_full_text_person).\n")
    }

    @Test func databasePathComesFromTheFlagThenTheEnvironment() throws {
        let cli = CommandRunner()
        #expect(try cli.run(["migrate", "--db", "flag.sqlite"]).status == 0)
        #expect(try cli.run(["migrate"], environment: ["SLUICE_DB": cli.path("env.sqlite")]).status == 0)
        #expect(FileManager.default.fileExists(atPath: cli.path("flag.sqlite")))
        #expect(FileManager.default.fileExists(atPath: cli.path("env.sqlite")))
        #expect(!FileManager.default.fileExists(atPath: cli.path("sluice.sqlite")))
    }

    // MARK: - seed and query

    @Test("query --format json writes every storage class and escape as sqlite3 would, and repairs invalid UTF-8")
    func jsonOutputOfAwkwardValues() throws {
        let cli = try Self.seeded()
        let plain = PlainConnection(path: cli.path("sluice.sqlite"))
        try plain.execute("""
            CREATE TABLE awkward (id INTEGER PRIMARY KEY, value);
            INSERT INTO awkward (value) VALUES
                ('quote " backslash \\ newline ' || char(10) || ' tab' || char(9) || ' bell' || char(7)),
                ('café 🌊 Ødegaard'),
                (CAST(x'41ff42c3' AS TEXT)),
                (-9223372036854775808), (9223372036854775807), (0), (-42),
                (NULL), (1.5), (x'00ff');
            """)
        let result = try cli.run(["query", "awkward", "--format", "json"])
        #expect(result.status == 0, "\(result)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
        let values = rows.map { $0["value"] }
        #expect(values[0] as? String == "quote \" backslash \\ newline \n tab\t bell\u{7}")
        #expect(values[1] as? String == "café 🌊 Ødegaard")
        #expect(values[2] as? String == "A\u{FFFD}B\u{FFFD}", "invalid UTF-8 is repaired, as the other formats do")
        #expect((values[3] as? NSNumber)?.int64Value == .min)
        #expect((values[4] as? NSNumber)?.int64Value == .max)
        #expect((values[5] as? NSNumber)?.int64Value == 0)
        #expect((values[6] as? NSNumber)?.int64Value == -42)
        #expect(values[7] is NSNull)
        #expect((values[8] as? NSNumber)?.doubleValue == 1.5)
        #expect(values[9] as? String == Data([0x00, 0xFF]).base64EncodedString())
        #expect(result.stdout.contains(#"\u0007"#))
    }

    @Test func seedJSONThenQueryAsJSON() throws {
        let cli = try Self.seeded()
        let result = try cli.run(["query", "person", "--format", "json"])
        #expect(result.status == 0)
        #expect(result.stdout == """
            [
              {"id":1,"first_name":"Zoë","last_name":"Ødegaard","age":31,"email":null,"street":null,"city":"Oslo","postal_code":null,"country":null},
              {"id":2,"first_name":"José","last_name":"García","age":null,"email":"jose@example.com","street":null,"city":null,"postal_code":null,"country":null}
            ]

            """)
    }

    @Test func seedJSONArrayWithTableAndCSV() throws {
        let cli = try Self.seeded()
        try cli.write("more.json", #"[{"first_name": "Ann", "last_name": "Lee", "age": 40.0}]"#)
        #expect(try cli.run(["seed", "more.json", "--table", "person"]).stdout == "seeded 1 person row from more.json\n")
        try cli.write("items.csv", """
            id,recipient_id,sender_id,created_at
            10,1,,2026-01-01 10:00:00.000
            11,2,1,"2026-01-02 10:00:00.000"
            """)
        #expect(try cli.run(["seed", "items.csv", "--table", "package"]).status == 0)
        try cli.write("contents.csv", "package_id,title,weight,position\r\n10,\"Tea, green\",250,0\r\n10,\"Book \"\"Sofie\"\"\nsecond line\",900,1\r\n")
        let csv = try cli.run(["seed", "contents.csv", "--table", "package_content"])
        #expect(csv.stdout == "seeded 2 package_content rows from contents.csv\n", "\(csv)")
        let out = try cli.run(["query", "package_content", "--format", "csv", "--order", "weight", "--desc"])
        #expect(out.stdout == "id,package_id,title,weight,position\n2,10,\"Book \"\"Sofie\"\"\nsecond line\",900,1\n1,10,\"Tea, green\",250,0\n")
        let packages = try cli.run(["query", "package", "--where", "sender_id IS NULL", "--format", "json"])
        #expect(packages.stdout.contains(#""id":10,"recipient_id":1,"sender_id":null"#))
    }

    @Test func seedAcceptsRowsInAnyOrderOfForeignKeys() throws {
        let cli = CommandRunner()
        #expect(try cli.run(["migrate"]).status == 0)
        // "package" sorts before "person": foreign keys are checked at the end.
        try cli.write("both.json", #"{"package": [{"id": 1, "recipient_id": 5, "created_at": "2026-01-01"}], "person": [{"id": 5, "first_name": "A", "last_name": "B"}]}"#)
        let result = try cli.run(["seed", "both.json"])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "seeded 1 package row, 1 person row from both.json\n")
    }

    @Test func queryFiltersOrdersAndLimits() throws {
        let cli = try Self.seeded()
        #expect(try cli.run(["seed", "--demo", "--people", "200"]).status == 0)
        let result = try cli.run(["query", "person", "--where", "first_name BEGINSWITH[c] 'zo' AND age > 30", "--order", "age,last_name", "--desc", "--limit", "3", "--format", "json"])
        #expect(result.status == 0, "\(result)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
        #expect(rows.count == 3)
        let ages = rows.compactMap { $0["age"] as? Int }
        #expect(ages == ages.sorted(by: >))
        #expect(rows.allSatisfy { ($0["first_name"] as? String)?.lowercased().hasPrefix("zo") == true })

        // A leading - is descending (the argument parser took "-age" for an option).
        let dashed = try cli.run(["query", "person", "--order", "-age,last_name", "--limit", "5", "--format", "json"])
        let spelled = try cli.run(["query", "person", "--order", "age DESC,last_name", "--limit", "5", "--format", "json"])
        #expect(dashed.status == 0 && dashed.stdout == spelled.stdout, "\(dashed)")
    }

    @Test func queryTableFormatIsReadable() throws {
        let cli = try Self.seeded()
        let result = try cli.run(["query", "person", "--order", "first_name"])
        #expect(result.stdout == """
            id │ first_name │ last_name │  age │ email            │ street │ city │ postal_code │ country
            ───┼────────────┼───────────┼──────┼──────────────────┼────────┼──────┼─────────────┼────────
             2 │ José       │ García    │ NULL │ jose@example.com │ NULL   │ NULL │ NULL        │ NULL   
             1 │ Zoë        │ Ødegaard  │   31 │ NULL             │ NULL   │ Oslo │ NULL        │ NULL   
            (2 rows)

            """)
    }

    @Test func tourRunsOnTheDefaultDatabase() throws {
        let cli = CommandRunner()
        let result = try cli.run(["tour", "--people", "300"])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("applied 004_create_app_state"))
        #expect(result.stdout.contains("seeded 300 people"))
        #expect(result.stdout.contains("$ sluice query person --where"))
        // The typed API's section prints the Swift it runs, and finds the first query's rows.
        #expect(result.stdout.contains(".where { $0.age.between(30, 40) && $0.city == \"Oslo\" }"), "\(result.stdout)")
        let sections = result.stdout.components(separatedBy: "\n$ ")
        func ids(_ text: String, pattern: String) -> [String] {
            text.split(separator: "\n").compactMap { line in line.range(of: pattern, options: .regularExpression).map { String(line[$0].filter(\.isNumber)) } }
        }
        let first = try #require(sections.first { $0.hasPrefix("sluice query person --where \"age BETWEEN 30 AND 40") })
        let typed = try #require(sections.last)
        let queried = ids(first, pattern: #"^\s*\d+ │"#)
        #expect(!queried.isEmpty && ids(typed, pattern: #"^\d+  "#) == queried, "\(first)\n\(typed)")
        #expect(FileManager.default.fileExists(atPath: cli.path("sluice.sqlite")))
        let again = try cli.run(["tour"])
        #expect(again.stdout.contains("skipped: the store already has 300 people"))
    }

    // MARK: - bad input: a clear error, a non-zero exit, the database unchanged

    @Test func malformedJSONNamesFileLineAndColumn() throws {
        let cli = try Self.seeded()
        try cli.write("bad.json", "{\n  \"person\": [\n    {\"first_name\": \"A\" \"last_name\": \"B\"}\n  ]\n}\n")
        let error = try Self.expectFailure(cli, ["seed", "bad.json"])
        #expect(error.contains("bad.json:line 3, column 24: malformed JSON"), "\(error)")
    }

    @Test func malformedCSVNamesFileAndLine() throws {
        let cli = try Self.seeded()
        try cli.write("quote.csv", "first_name,last_name\nA,B\n\"C,D\nE,F\n")
        #expect(try Self.expectFailure(cli, ["seed", "quote.csv", "--table", "person"])
            .contains("quote.csv:line 3, column 1: unterminated quoted field"))
        try cli.write("stray.csv", "first_name,last_name\n\"A\"x,B\n")
        #expect(try Self.expectFailure(cli, ["seed", "stray.csv", "--table", "person"])
            .contains("stray.csv:line 2, column 3: a closing quote must be followed by a comma or a line break"))
        try cli.write("short.csv", "first_name,last_name\nA,B\n\"multi\nline\",C\nD\n")
        #expect(try Self.expectFailure(cli, ["seed", "short.csv", "--table", "person"])
            .contains("short.csv:line 5: 1 field, but the header has 2"))
    }

    @Test func unknownTableIsNamedWithTheValidOnes() throws {
        let cli = try Self.seeded()
        try cli.write("t.json", #"{"people": [{"first_name": "A"}]}"#)
        let list = "(tables: app_state, message, package, package_content, person)"
        #expect(try Self.expectFailure(cli, ["seed", "t.json"]).contains("unknown table 'people' \(list)"))
        #expect(try Self.expectFailure(cli, ["query", "people"]).contains("unknown table 'people' \(list)"))
        try cli.write("t.csv", "a\n1\n")
        #expect(try Self.expectFailure(cli, ["seed", "t.csv", "--table", "people"]).contains("unknown table 'people'"))
    }

    @Test func unknownColumnIsNamedWithTheValidOnes() throws {
        let cli = try Self.seeded()
        let columns = "(columns: id, first_name, last_name, age, email, street, city, postal_code, country)"
        try cli.write("c.json", #"{"person": [{"first_name": "A", "last_name": "B"}, {"first_name": "C", "last_name": "D", "nick": "x"}]}"#)
        #expect(try Self.expectFailure(cli, ["seed", "c.json"]).contains("c.json:person row 2: unknown column 'nick' in table person \(columns)"))
        try cli.write("c.csv", "first_name,nick\nA,B\n")
        #expect(try Self.expectFailure(cli, ["seed", "c.csv", "--table", "person"]).contains("c.csv:line 1, field 2: unknown column 'nick' in table person \(columns)"))
    }

    @Test func wrongValueTypeNamesRowAndColumn() throws {
        let cli = try Self.seeded()
        try cli.write("v.json", #"{"person": [{"first_name": "A", "last_name": "B", "age": 3}, {"first_name": "C", "last_name": "D", "age": "old"}]}"#)
        #expect(try Self.expectFailure(cli, ["seed", "v.json"]).contains(#"v.json:person row 2: column 'age' expects an integer, got text "old""#))
        try cli.write("v.csv", "first_name,last_name,age\nA,B,3\nC,D,3.5\n")
        #expect(try Self.expectFailure(cli, ["seed", "v.csv", "--table", "person"]).contains(#"v.csv:line 3: column 'age' expects an integer, got "3.5""#))
        try cli.write("nested.json", #"[{"first_name": ["A"], "last_name": "B"}]"#)
        #expect(try Self.expectFailure(cli, ["seed", "nested.json", "--table", "person"]).contains("nested.json:person row 1: column 'first_name' holds an array"))
    }

    @Test func constraintViolationNamesTheRow() throws {
        let cli = try Self.seeded()
        try cli.write("n.json", #"{"person": [{"first_name": "A", "last_name": "B"}, {"first_name": "C"}]}"#)
        #expect(try Self.expectFailure(cli, ["seed", "n.json"]).contains("n.json:person row 2: NOT NULL constraint failed: person.last_name"))
        try cli.write("dup.csv", "id,first_name,last_name\n3,A,B\n1,C,D\n")
        #expect(try Self.expectFailure(cli, ["seed", "dup.csv", "--table", "person"]).contains("dup.csv:line 3: UNIQUE constraint failed: person.id"))
        try cli.write("fk.json", #"{"package": [{"recipient_id": 1, "created_at": "x"}, {"recipient_id": 99, "created_at": "y"}]}"#)
        #expect(try Self.expectFailure(cli, ["seed", "fk.json"]).contains("fk.json:package row 2: FOREIGN KEY constraint failed: the row references a person that does not exist"))
    }

    /// A row that pointed nowhere before the seed (left by the shell with
    /// foreign keys off) is not the file's fault: a valid file goes in, and
    /// a file with its own broken reference is refused for that row.
    @Test func anOrphanLeftBeforeIsNotBlamedOnTheFile() throws {
        let cli = try Self.seeded()
        try WatchCommandTests.shell(cli, "PRAGMA foreign_keys = OFF; INSERT INTO package (recipient_id, created_at) VALUES (424242, 'orphan');")
        try cli.write("valid.json", #"{"package": [{"recipient_id": 1, "created_at": "x"}]}"#)
        let valid = try cli.run(["seed", "valid.json"])
        #expect(valid.status == 0 && valid.stdout.contains("seeded 1 package row from valid.json"), "\(valid)")
        try cli.write("fk.json", #"{"package": [{"recipient_id": 1, "created_at": "x"}, {"recipient_id": 99, "created_at": "y"}]}"#)
        #expect(try Self.expectFailure(cli, ["seed", "fk.json"]).contains("fk.json:package row 2: FOREIGN KEY constraint failed"))
    }

    @Test func badWhereAndOrderShowACaret() throws {
        let cli = try Self.seeded()
        let syntax = try Self.expectFailure(cli, ["query", "person", "--where", "age >> 3"])
        #expect(syntax.contains("expected a column name or a value, found '>' (at position 6)\n    age >> 3\n         ^"), "\(syntax)")
        let column = try Self.expectFailure(cli, ["query", "person", "--where", "agee > 3"])
        #expect(column.contains("unknown column 'agee' in table person"))
        #expect(column.contains("    agee > 3\n    ^"))
        let order = try Self.expectFailure(cli, ["query", "person", "--order", "last_name, nme"])
        #expect(order.contains("unknown column 'nme'"))
        #expect(order.contains("    last_name, nme\n               ^"))
        let injection = try Self.expectFailure(cli, ["query", "person", "--where", "age > 1; DROP TABLE person"])
        #expect(injection.contains("unexpected character ';'"))
        #expect(try Self.expectFailure(cli, ["query", "person", "--limit=-1"]).contains("--limit must be a positive number, got -1"))
    }

    @Test func fileThatIsNotADatabaseIsLeftUntouched() throws {
        let cli = CommandRunner()
        let text = "name,age\nnot,a database\n"
        try cli.write("notes.csv", text)
        for arguments in [["query", "person"], ["migrate"], ["seed", "--demo"], ["tour"]] {
            let result = try cli.run(arguments + ["--db", "notes.csv"])
            #expect(result.status != 0, "\(arguments): \(result)")
            #expect(result.stderr.contains("notes.csv is not an SQLite database"), "\(result)")
            #expect(try String(contentsOfFile: cli.path("notes.csv"), encoding: .utf8) == text)
            #expect(!FileManager.default.fileExists(atPath: cli.path("notes.csv-wal")))
        }
    }

    @Test func missingDatabaseIsNotCreatedByQueryOrSeed() throws {
        let cli = CommandRunner()
        let query = try cli.run(["query", "person"])
        #expect(query.status != 0)
        #expect(query.stderr.contains("no database at sluice.sqlite"))
        try cli.write("p.json", #"[{"first_name": "A", "last_name": "B"}]"#)
        let seed = try cli.run(["seed", "p.json", "--table", "person"])
        #expect(seed.status != 0)
        #expect(seed.stderr.contains("no database at sluice.sqlite"))
        #expect(!FileManager.default.fileExists(atPath: cli.path("sluice.sqlite")))
    }

    @Test func missingOrUnknownSeedFile() throws {
        let cli = try Self.seeded()
        #expect(try Self.expectFailure(cli, ["seed", "nope.json"]).contains("nope.json: no such file"))
        try cli.write("data.txt", "x")
        #expect(try Self.expectFailure(cli, ["seed", "data.txt"]).contains("cannot tell the format of data.txt"))
        try cli.write("rows.json", "[]")
        #expect(try Self.expectFailure(cli, ["seed", "rows.json"]).contains("name their table with --table"))
        try cli.write("empty.json", "")
        #expect(try Self.expectFailure(cli, ["seed", "empty.json"]).contains("empty.json: malformed JSON: the file is empty"))
    }
}
