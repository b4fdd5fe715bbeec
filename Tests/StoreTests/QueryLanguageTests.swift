import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

@Suite(.timeLimit(.minutes(10))) struct QueryLanguageTests {
    /// Six people with NULLs, non-ASCII, decomposed forms and wildcard characters.
    static func fixture() throws -> Store {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try store.write { tx in
            try tx.insert(Person(id: 1, firstName: "Zoë", lastName: "Ng", age: 30, email: "zoe@x", city: "Oslo"))
            try tx.insert(Person(id: 2, firstName: "Émile", lastName: "Dubois", age: 45, email: nil, city: "Lyon"))
            try tx.insert(Person(id: 3, firstName: "zoltan", lastName: "Kim", age: nil, email: "z@k", city: "Oslo"))
            try tx.insert(Person(id: 4, firstName: "Anna", lastName: "Müller", age: 30, email: "anna@example.com", city: "München"))
            try tx.insert(Person(id: 5, firstName: "Bob", lastName: "O'Brien", age: 17, email: "b*b@x?", city: nil))
            try tx.insert(Person(id: 6, firstName: "e\u{301}mile", lastName: "Smith", age: 60, email: nil, city: "oslo"))
        }
        return store
    }

    static func ids(_ store: Store, _ filter: Filter) throws -> [Int64] {
        try store.read { db in try db.fetchAll(Person.self, filter: filter).compactMap(\.id) }
    }

    @Test(arguments: [
        ("age == 30", [1, 4]),
        ("age = 30", [1, 4]),
        ("age == 30.0", [1, 4]),
        ("age != 30", [2, 3, 5, 6]),
        ("age <> 30", [2, 3, 5, 6]),
        ("age > 30", [2, 6]),
        ("age >= 45", [2, 6]),
        ("age < 18", [5]),
        ("age <= 17", [5]),
        ("age == nil", [3]),
        ("age IS NULL", [3]),
        ("age is not null", [1, 2, 4, 5, 6]),
        ("age != NULL", [1, 2, 4, 5, 6]),
        ("city == 'Oslo'", [1, 3]),
        ("city ==[c] 'oslo'", [1, 3, 6]),
        ("first_name ==[c] 'ZOË'", [1]),
        ("first_name == 'Émile'", [2]),
        ("age IN {30, 45}", [1, 2, 4]),
        ("age IN (17)", [5]),
        ("age NOT IN {30}", [2, 3, 5, 6]),
        ("city IN ('Oslo', 'Lyon')", [1, 2, 3]),
        ("age BETWEEN 30 AND 45", [1, 2, 4]),
        ("age BETWEEN {18, 30}", [1, 4]),
        ("age NOT BETWEEN 18 AND 50", [3, 5, 6]),
        ("first_name BEGINSWITH 'Zo'", [1]),
        ("first_name BEGINSWITH[c] 'zo'", [1, 3]),
        ("last_name ENDSWITH 'er'", [4]),
        ("last_name ENDSWITH[c] 'ER'", [4]),
        ("first_name CONTAINS 'mil'", [2, 6]),
        ("first_name CONTAINS[c] 'ÉMI'", [2]),
        ("last_name CONTAINS \"'\"", [5]),
        ("email LIKE '*@example.com'", [4]),
        ("email LIKE 'z?k'", [3]),
        ("email LIKE[c] 'ANNA*'", [4]),
        ("email CONTAINS '*'", [5]),
        ("email CONTAINS '?'", [5]),
        ("email BEGINSWITH '['", []),
        ("NOT (age > 30)", [1, 3, 4, 5]),
        ("!(age > 30)", [1, 3, 4, 5]),
        ("NOT email CONTAINS 'x'", [2, 3, 6]),
        ("age > 20 AND city == 'Oslo'", [1]),
        ("age > 50 OR city == 'Lyon'", [2, 6]),
        ("(age < 18 OR age > 50) AND city == nil", [5]),
        ("age == 30 && !(city == 'Oslo')", [4]),
        ("age > 50 || age < 18", [5, 6]),
        ("age between 30 and 45 and not city == 'Lyon'", [1, 4]),
        ("age > -1 AND age < 1e2", [1, 2, 4, 5, 6]),
        ("age > .5e1 AND age < 18", [5]),
        ("TRUEPREDICATE", [1, 2, 3, 4, 5, 6]),
        ("FALSEPREDICATE", []),
        ("30 == age", [1, 4]),
        ("first_name == first_name", [1, 2, 3, 4, 5, 6]),
    ] as [(String, [Int64])])
    func queryStringSelectsTheRightRows(_ query: String, _ expected: [Int64]) throws {
        let store = try Self.fixture()
        #expect(try Self.ids(store, Filter(query)) == expected)
    }

    @Test func positionalArgumentsAreBound() throws {
        let store = try Self.fixture()
        #expect(try Self.ids(store, Filter("age > $0 AND city == $1", 20, "Oslo")) == [1])
        #expect(try Self.ids(store, Filter("age > ? AND city == ?", 20, "Oslo")) == [1])
        #expect(try Self.ids(store, Filter("city == $1 OR age == $0", 17, "Lyon")) == [2, 5])
        #expect(try Self.ids(store, Filter("first_name BEGINSWITH[c] $0", "ZO")) == [1, 3])
        #expect(try Self.ids(store, Filter("age IN {$0, $1}", 17, 60)) == [5, 6])
    }

    @Test(arguments: [
        ("", "the query is empty", 0),
        ("age >", "expected a value after '>', found the end of the query", 5),
        ("age > 30 AND", "expected a column name or a value", 12),
        ("age >> 3", "expected a column name or a value, found '>'", 5),
        ("age = 'unterminated", "unterminated string: no closing '", 6),
        ("(age > 3", "expected ')', found the end of the query", 8),
        ("age > 3)", "expected AND, OR or the end of the query, found ')'", 7),
        ("first_name LIKE[x] 'a'", "unknown modifier [x]; only [c] (case-insensitive) is supported", 16),
        ("age @ 3", "unexpected character '@'", 4),
        ("age IN 3", "expected '(' or '{' to start the IN list, found the number 3", 7),
        ("age BETWEEN 1", "expected AND between the bounds, found the end of the query", 13),
        ("age > 1abc", "malformed number '1a'", 6),
        ("first_name == 'x' DROP TABLE person", "expected AND, OR or the end of the query, found 'DROP'", 18),
        ("age", "expected an operator", 3),
        ("AND > 3", "expected a column name or a value, found the keyword AND", 0),
        ("age > $", "expected an argument number after '$'", 6),
        ("age > $0", "argument $0 is missing: 0 arguments given", 6),
        ("name == 'a\\q'", "unknown escape '\\q' in string", 10),
        ("`first name == 1", "unterminated column name: no closing `", 0),
        ("`` == 1", "empty column name in backticks", 0),
        ("last_name = 'O' 'Brien'", "expected AND, OR or the end of the query, found the string 'Brien'", 16),
    ] as [(String, String, Int)])
    func malformedQueryShowsTheFaultWithACaret(_ query: String, _ message: String, _ position: Int) throws {
        let error = try #require(throws: StoreError.self) { try Filter(query) }
        #expect(error.code == .invalidQuery)
        #expect(error.message.hasPrefix(message), "got: \(error.message)")
        let lines = error.message.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 3)
        #expect(lines.last.map { $0.count - 4 - 1 } == position, "caret under position \(position): \(error.message)")
    }

    /// SQL's doubled quote inside a string, backticks around a column name,
    /// and text compared with a number column refused with a caret.
    @Test func doubledQuotesBackticksAndTypeChecks() throws {
        let store = try Self.fixture()
        let ids = { (query: String) in try store.read { db in try db.fetchAll(Person.self, filter: try Filter(query), orderBy: [Ordering("id")]) }.compactMap(\.id) }
        #expect(try ids("last_name == 'O''Brien'") == [5])
        #expect(try ids("last_name == \"O'Brien\" AND `first_name` == 'Bob'") == [5])
        #expect(try ids("age > '40'") == [2, 6], "numeric text is converted, as SQLite's affinity does")
        #expect(try ids("city == 'Oslo'") == [1, 3])
        for query in ["age > 'thirty'", "age IN {1, 'x'}", "age BETWEEN 'a' AND 3", "'old' == age"] {
            let error = try #require(throws: StoreError.self) { try ids(query) }
            #expect(error.code == .invalidQuery && error.message.contains("cannot compare the integer column 'age' with the text"), "\(query): \(error)")
            #expect(error.message.contains("^"), "a caret: \(error.message)")
        }
    }

    @Test func unknownColumnIsReportedWithACaretAndTheValidColumns() throws {
        let store = try Self.fixture()
        let error = try #require(throws: StoreError.self) { try Self.ids(store, Filter("age > 3 AND agee < 5")) }
        #expect(error.code == .unknownColumn)
        #expect(error.message == """
            unknown column 'agee' in table person (columns: id, first_name, last_name, age, email, street, city, postal_code, country) (at position 13)
                age > 3 AND agee < 5
                            ^
            """)
    }

    @Test func stringOperatorNeedsTextOnItsRight() throws {
        let store = try Self.fixture()
        let error = try #require(throws: StoreError.self) { try Self.ids(store, Filter("city BEGINSWITH 3")) }
        #expect(error.message.hasPrefix("BEGINSWITH needs a text value on its right"))
    }

    @Test func injectionAttemptsStayValuesOrFail() throws {
        let store = try Self.fixture()
        let before = try dump(store)
        #expect(try Self.ids(store, Filter("first_name == $0", "x'); DROP TABLE person; --")) == [])
        // A doubled quote is a quote inside the string (SQL's rule): the whole text stays one value.
        #expect(try Self.ids(store, Filter("first_name == 'x''); DROP TABLE person; --'")) == [])
        #expect(throws: StoreError.self) { try Filter("first_name == 'x'; DROP TABLE person") }
        #expect(throws: StoreError.self) { try Self.ids(store, Column("first_name\" = 'x' OR 1=1 --") == "x") }
        #expect(throws: StoreError.self) { try Self.ids(store, Filter("first_name == 'x' -- comment")) }
        #expect(throws: StoreError.self) { try Ordering.parse("first_name; DROP TABLE person") }
        #expect(try Self.ids(store, Filter("\"first_name\" == 'first_name'")) == [1, 2, 3, 4, 5, 6], "a double-quoted token is a string, not an identifier")
        #expect(try dump(store) == before)
    }

    @Test func typedFiltersMatchTheirQueryStrings() throws {
        let store = try Self.fixture()
        let pairs: [(Filter, String)] = [
            (Column("age") == 30, "age == 30"),
            (Column("age") != 30, "age != 30"),
            (Column("age") > 30 && Column("city") == "Lyon", "age > 30 AND city == 'Lyon'"),
            (Column("age") < 18 || Column("age") >= 60, "age < 18 OR age >= 60"),
            (!(Column("age") > 30), "NOT age > 30"),
            (Column("age").in([17, 60]), "age IN {17, 60}"),
            (Column("age").between(18, 45), "age BETWEEN 18 AND 45"),
            (Column("age").isNull, "age IS NULL"),
            (Column("email").isNotNull, "email IS NOT NULL"),
            (Column("first_name").beginsWith("zo", caseInsensitive: true), "first_name BEGINSWITH[c] 'zo'"),
            (Column("last_name").endsWith("er"), "last_name ENDSWITH 'er'"),
            (Column("first_name").contains("MIL", caseInsensitive: true), "first_name CONTAINS[c] 'MIL'"),
            (Column("email").like("*@*"), "email LIKE '*@*'"),
            (Column("age") == Int?.none, "age == nil"),
        ]
        for (typed, query) in pairs {
            #expect(try Self.ids(store, typed) == Self.ids(store, Filter(query)), "\(query)")
        }
        // Combining parsed filters keeps each one's own arguments.
        let combined = try Filter("age > $0", 20) && Filter("city == $0", "Oslo")
        #expect(try Self.ids(store, combined) == [1])
    }

    @Test func orderingParsesColumnsAndDirections() throws {
        let orderings = try Ordering.parse("last_name, first_name DESC,age asc")
        #expect(orderings.map(\.column) == ["last_name", "first_name", "age"])
        #expect(orderings.map(\.descending) == [false, true, false])
        for bad in ["", "a,,b", "a DESC b", "a,", "1", "a; b"] {
            #expect(throws: StoreError.self, "\(bad)") { try Ordering.parse(bad) }
        }
    }

    @Test func orderBreaksTiesByPrimaryKeyAndFollowsSQLite() throws {
        let store = try Self.fixture()
        func ids(_ order: String) throws -> [Int64] {
            try store.read { db in try db.fetchAll(Person.self, orderBy: Ordering.parse(order)).compactMap(\.id) }
        }
        #expect(try ids("age") == [3, 5, 1, 4, 2, 6], "NULL first, then ascending, ties by id")
        #expect(try ids("age DESC") == [6, 2, 1, 4, 5, 3], "ties still by ascending id")
        #expect(try ids("city, age DESC") == [5, 2, 4, 1, 3, 6], "BINARY collation: 'Oslo' < 'oslo', NULL first")
        let error = try #require(throws: StoreError.self) { try ids("city, agee") }
        #expect(error.code == .unknownColumn)
        #expect(error.message.hasSuffix("    city, agee\n          ^"))
    }

    @Test func limitAndCount() throws {
        let store = try Self.fixture()
        let limited = try store.read { db in try db.fetchRows(table: "person", filter: Filter("age > 0"), orderBy: [Ordering("age")], limit: 2) }
        #expect(limited.compactMap { Int64(sqliteValue: $0["id"] ?? .null) } == [5, 1])
        #expect(try store.read { db in try db.fetchCount(Person.self, filter: Filter("city ==[c] 'OSLO'")) } == 3)
    }
}
