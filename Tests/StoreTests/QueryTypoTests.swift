import Foundation
import SluiceTestSupport
import Testing
import Sluice
import SluiceDemo

/// A query string is checked where it is written: `filter` throws on a typo
/// (a column, a relationship or a related column that does not exist), with
/// the table's columns and a caret, as Realm checks a predicate's key paths.
/// (Before, `filter("txt == 1")` gave results that counted 0, had no first
/// element and iterated nothing; only `fetch()` and observers saw the error.)
@Suite(.timeLimit(.minutes(10))) struct QueryTypoTests {
    @Test func aTypoThrowsAtFilter() throws {
        let store = try Store.inMemory(migrations: DemoSchema.migrations)
        let people = store.objects(Person.self)
        let column = try #require(throws: StoreError.self) { try people.filter("fist_name == $0", "Ana") }
        #expect(column.code == .unknownColumn)
        #expect(column.message.contains("unknown column 'fist_name' in table person (columns: id, first_name"), "\(column.message)")
        #expect(column.message.contains("^"), "a caret under the name: \(column.message)")
        let related = try #require(throws: StoreError.self) { try store.objects(Package.self).filter("recipient.town == 'Oslo'") }
        #expect(related.message.contains("unknown column 'town' in table person"), "\(related.message)")
        let syntax = try #require(throws: StoreError.self) { try people.filter("age >") }
        #expect(syntax.code == .invalidQuery)
        let comparison = try #require(throws: StoreError.self) { try people.filter("age > 'thirty'") }
        #expect(comparison.message.contains("cannot compare the integer column 'age' with the text"))
        // What is right goes through, and chains as before.
        #expect(try people.filter("first_name == $0", "Ana").filter("age > 3").count == 0)
    }

    /// The results' own table is checked too: a model whose table the
    /// migrations never made is named at `filter`.
    @Test func aMissingTableThrowsAtFilter() throws {
        let store = try Store.inMemory(migrations: [])
        let error = try #require(throws: StoreError.self) { try store.objects(Person.self).filter("age > 3") }
        #expect(error.code == .unknownTable, "\(error)")
    }
}
