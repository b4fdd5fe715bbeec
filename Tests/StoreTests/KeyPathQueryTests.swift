import Foundation
import SluiceDemo
import SluiceTestSupport
import Testing
@testable import Sluice

/// Typed filters compile to exactly the SQL and arguments of the query
/// strings they stand for (values bound, never spliced).
@Suite(.timeLimit(.minutes(10))) struct KeyPathQueryTests {
    static func compiled(_ filter: ModelFilter<Person>, _ table: TableInfo) throws -> (String, [SQLiteValue]) {
        let compiled = try FilterCompiler.compile(try filter.filter.get(), table: table)
        return (compiled.sql, compiled.arguments)
    }

    static func compiled(_ filter: Filter, _ table: TableInfo) throws -> (String, [SQLiteValue]) {
        let compiled = try FilterCompiler.compile(filter, table: table)
        return (compiled.sql, compiled.arguments)
    }

    @Test func typedFiltersCompileToTheSameBoundSQL() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let table = try store.read { db in try db.tableInfo("person") }
        let pairs: [(ModelFilter<Person>, Filter)] = [
            (\.age >= 18 && \.city == "Oslo", try Filter("age >= $0 AND city == $1", 18, "Oslo")),
            (\.firstName != "Bo" || !(\.age < 3), try Filter("first_name != $0 OR NOT age < $1", "Bo", 3)),
            (\.email == nil, try Filter("email == $0", SQLiteValue.null)),
            (ModelQuery<Person>().lastName.beginsWith("Ø", caseInsensitive: true), try Filter("last_name BEGINSWITH[c] $0", "Ø")),
            (ModelQuery<Person>().age.between(30, 39), try Filter("age BETWEEN {$0, $1}", 30, 39)),
            (ModelQuery<Person>().city.in(["Oslo", "Bergen"]), try Filter("city IN {$0, $1}", "Oslo", "Bergen")),
        ]
        for (typed, string) in pairs {
            let (typedSQL, typedArguments) = try Self.compiled(typed, table)
            let (stringSQL, stringArguments) = try Self.compiled(string, table)
            #expect(typedSQL == stringSQL)
            #expect(typedArguments == stringArguments)
            #expect(!typedSQL.contains("Oslo") && !typedSQL.contains("Bo'"), "values are bound, not spliced: \(typedSQL)")
        }
    }

    @Test func lazyMembersUseSQLOffsetsAndCounts() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        let table = try store.read { db in try db.tableInfo("person") }
        var select = SelectBuilder(table: table)
        (select.orderBy, select.offset, select.limit) = ([Ordering("last_name")], 5, 1)
        #expect(try select.build().sql.hasSuffix(#"ORDER BY "last_name", "id" LIMIT ? OFFSET ?"#))
        select.reversed = true
        #expect(try select.build().sql.contains(#"ORDER BY "last_name" DESC, "id" DESC"#))
        var count = SelectBuilder(table: table)
        (count.columns, count.orderBy) = (.count, [Ordering("age")])
        #expect(try count.build().sql == #"SELECT count(*) FROM "person""#)
    }
}
