import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

/// A filter written back as text (what a sync subscription sends): parsed again with its
/// arguments, it keeps the same rows, and writing it again gives the same text.
@Suite(.timeLimit(.minutes(10))) struct FilterTextTests {
    /// One store for every case (the cases only read it).
    static let shared = Result { try RelationshipTests.store().0 }

    static func roundTrip(_ filter: Filter) throws -> Filter {
        let (query, arguments) = filter.queryText()
        let again = try Filter(query, arguments: arguments)
        let (second, secondArguments) = again.queryText()
        #expect(second == query && secondArguments == arguments, "\(query) → \(second)")
        return again
    }

    @Test(arguments: [
        ("recipient.city == 'Oslo'", [1, 3]),
        ("sender.city ==[c] 'OSLO'", [2]),
        ("sender.city == nil", [3]),
        ("sender_id IS NOT NULL AND created_at BETWEEN {'2026-01-01 00:00:02', '2026-01-02'}", [2]),
        ("NOT created_at IN ('2026-01-01 00:00:01', 'x')", [2, 3]),
        ("recipient.last_name LIKE[c] '?' AND NOT (created_at ENDSWITH '3')", [1, 2]),
        ("ANY contents.weight > 1000", [1]),
        ("ALL contents.weight < 100", [2, 3]),
        ("contents.@sum.weight > 1000", [1]),
        ("package_content(package_id).@min.weight == 10", [2]),
        ("SUBQUERY(contents, $c, $c.weight > 400 AND $c.title == 'a').@count > 0", [1]),
        ("subquery(contents,$x,$x.title IN {'a','c'} OR $x.weight >= 1500).@COUNT != 1", [1, 3]),
        ("TRUEPREDICATE AND NOT FALSEPREDICATE", [1, 2, 3]),
    ] as [(String, [Int64])])
    func queryStringsKeepTheirRows(query: String, expected: [Int64]) throws {
        let store = try Self.shared.get()
        let again = try Self.roundTrip(try Filter(query))
        #expect(try RelationshipTests.ids(store.objects(Package.self).filter(again)) == expected, "\(query) → \(again.queryText().query)")
    }

    @Test func filtersBuiltInSwiftKeepTheirValuesAsArguments() throws {
        let store = try Self.shared.get()
        let filter = Column("recipient.city") == "Oslo" && Column("created_at").beginsWith("2026-01-01 00:00:0", caseInsensitive: true)
            || Column("sender_id").in([1, 2]) && !(Column("created_at") > "2026-01-01 00:00:02")
        let (query, arguments) = filter.queryText()
        #expect(arguments.count == 5, "\(query) \(arguments)")
        #expect(!query.contains("Oslo"), "values travel as arguments, never in the text")
        let again = try Self.roundTrip(filter)
        #expect(try RelationshipTests.ids(store.objects(Package.self).filter(again)) == (try RelationshipTests.ids(store.objects(Package.self).filter(filter))))
        // Typed filters too.
        let typed = try (\Package.senderID == 2).untyped()
        #expect(try RelationshipTests.ids(store.objects(Package.self).filter(try Self.roundTrip(typed))) == [1])
    }

    @Test func oddColumnNamesAndValuesSurvive() throws {
        // A keyword, a space, a backtick: in backticks; quotes and newlines in values: arguments.
        for name in ["select", "in", "two words", "a`b", "ANY", "match"] {
            let (query, arguments) = (Column(name) == "it's\n\"x\"").queryText()
            let parsed = try Filter(query, arguments: arguments)
            guard case .comparison(.column(let column, _), .equal, .value(.text(let value)), false) = parsed.resolvedPredicate else {
                Issue.record("\(name): \(query) parsed as \(parsed.predicate)")
                continue
            }
            #expect(column == name && value == "it's\n\"x\"", "\(query)")
        }
    }
}
