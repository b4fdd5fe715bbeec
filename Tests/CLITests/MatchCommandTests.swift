import Foundation
import Sluice
import SluiceDemo
import SluiceTestSupport
import Testing

/// `sluice query --match` ranks as SQLite's own `ORDER BY rank` on the same
/// index, and `sluice watch --match` follows the search as another process writes.
@Suite(.timeLimit(.minutes(10))) struct MatchCommandTests {
    /// A runner whose ./sluice.sqlite has the demo schema (with its full-text
    /// index of people) and people in Oslo and elsewhere.
    static func indexed() throws -> CommandRunner {
        let cli = CommandRunner()
        #expect(try cli.run(["migrate"]).status == 0)
        try cli.write("people.json", """
            {"person": [
              {"id": 1, "first_name": "Zoë", "last_name": "Ødegaard", "city": "Oslo"},
              {"id": 2, "first_name": "Oslo", "last_name": "Oslo", "city": "Oslo"},
              {"id": 3, "first_name": "Ana", "last_name": "Kim", "city": "Bergen"},
              {"id": 4, "first_name": "Zoe", "last_name": "Oslo", "city": "Hamar"}
            ]}
            """)
        #expect(try cli.run(["seed", "people.json"]).status == 0)
        return cli
    }

    @Test func matchRanksAsSQLiteDoes() throws {
        let cli = try Self.indexed()
        let result = try cli.run(["query", "person", "--match", "oslo", "--format", "csv"])
        #expect(result.status == 0, "\(result)")
        let ids = result.stdout.split(separator: "\n").dropFirst().compactMap { Int64($0.split(separator: ",").first ?? "") }
        let plain = PlainConnection(path: cli.path("sluice.sqlite"))
        let ranked = try plain.rows("SELECT rowid FROM sluice_fts_person WHERE sluice_fts_person MATCH 'oslo' ORDER BY rank, rowid")
        #expect(ids == ranked.compactMap { Int64(sqliteValue: $0[0]) }, "\(result.stdout)")
        #expect(ids.first == 2, "three columns of Oslo first")
        // Combined with --where, and a prefix and diacritics.
        let zo = try cli.run(["query", "person", "--match", "zo*", "--where", "city == 'Oslo'", "--format", "csv"])
        #expect(zo.stdout.split(separator: "\n").count == 2, "\(zo)")
        // A malformed full-text query: a clear error, non-zero exit, nothing printed.
        let bad = try cli.run(["query", "person", "--match", "oslo AND"])
        #expect(bad.status != 0 && bad.stdout.isEmpty)
        #expect(bad.stderr.contains("invalid full-text query"), "\(bad.stderr)")
    }

    @Test func watchFollowsASearch() throws {
        let cli = try Self.indexed()
        let watch = try cli.start(["watch", "person", "--match", "oslo", "--format", "json"])
        let initial = WatchCommandTests.json(watch.nextLine())
        let ranked = try PlainConnection(path: cli.path("sluice.sqlite"))
            .rows("SELECT rowid FROM sluice_fts_person WHERE sluice_fts_person MATCH 'oslo' ORDER BY rank, rowid")
        #expect((initial["rows"] as? [[String: Any]])?.compactMap { ($0["id"] as? Int).map(Int64.init) } == ranked.compactMap { Int64(sqliteValue: $0[0]) },
                "\(initial)")
        try WatchCommandTests.shell(cli, "UPDATE person SET city = 'Oslo' WHERE id = 3;")
        let update = WatchCommandTests.json(watch.nextLine())
        #expect((update["inserted"] as? [[String: Any]])?.first?["id"] as? Int == 3, "\(update)")
    }

    @Test func aSeededDemoStoreCanBeSearchedAsItIs() throws {
        let cli = CommandRunner()
        #expect(try cli.run(["seed", "--demo", "--people", "300"]).status == 0)
        let plain = PlainConnection(path: cli.path("sluice.sqlite"))
        let first = try plain.rows("SELECT city FROM person WHERE city IS NOT NULL LIMIT 1").first?.first
        guard case .text(let city) = first, !city.contains("'"), !city.contains("\"") else {
            Issue.record("the demo seed gave no plain city: \(String(describing: first))")
            return
        }
        let result = try cli.run(["query", "person", "--match", "\"\(city)\"", "--format", "csv"])
        #expect(result.status == 0, "\(result)")
        let ids = result.stdout.split(separator: "\n").dropFirst().compactMap { Int64($0.split(separator: ",").first ?? "") }
        let ranked = try plain.rows("SELECT rowid FROM sluice_fts_person WHERE sluice_fts_person MATCH '\"\(city)\"' ORDER BY rank, rowid")
        #expect(!ids.isEmpty && ids == ranked.compactMap { Int64(sqliteValue: $0[0]) }, "\(result.stdout)")
    }
}
