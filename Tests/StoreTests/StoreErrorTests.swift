import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

@Suite(.timeLimit(.minutes(10))) struct StoreErrorTests {
    @Test func constraintViolationCarriesCodeMessageAndSQL() throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: DemoSchema.migrations)
        let error = try #require(throws: StoreError.self) {
            try store.write { tx in
                try tx.execute(sql: "INSERT INTO person (first_name, last_name) VALUES (?, NULL)", arguments: ["secret-value"])
            }
        }
        #expect(error.code == .constraint)
        #expect(error.extendedCode == 1299) // SQLITE_CONSTRAINT_NOTNULL
        #expect(error.message == "NOT NULL constraint failed: person.last_name")
        #expect(error.sql == "INSERT INTO person (first_name, last_name) VALUES (?, NULL)")
        #expect(error.description == "SQLite error 19: NOT NULL constraint failed: person.last_name - while executing `INSERT INTO person (first_name, last_name) VALUES (?, NULL)`")
        #expect(!error.description.contains("secret-value"), "bound values stay out of descriptions")
    }

    @Test func syntaxErrorNamesTheSQL() throws {
        let database = TemporaryDatabase()
        let store = try database.store()
        let error = try #require(throws: StoreError.self) {
            try store.read { db in try db.fetchRows(sql: "SELEC 1") }
        }
        #expect(error.code == .error)
        #expect(error.message.contains("syntax error"))
        #expect(error.sql == "SELEC 1")
    }

    @Test func codesMatchInCatchPatterns() throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: DemoSchema.migrations)
        var matched = false
        do {
            try store.write { tx in try tx.insert(Person(id: 1, firstName: "A", lastName: "B")); try tx.insert(Person(id: 1, firstName: "C", lastName: "D")) }
        } catch StoreError.Code.constraint {
            matched = true
        } catch {
            Issue.record("unexpected error \(error)")
        }
        #expect(matched)
    }

    @Test func fileThatIsNotADatabaseIsRefusedAndLeftUntouched() throws {
        let database = TemporaryDatabase()
        let bytes = Data("this is a text file, not a database\n".utf8) + Data(repeating: 7, count: 4096)
        try bytes.write(to: URL(fileURLWithPath: database.path))
        let error = try #require(throws: StoreError.self) { try Store(path: database.path) }
        #expect(error.code == .notADatabase)
        #expect(error.message.contains(database.path))
        #expect(try Data(contentsOf: URL(fileURLWithPath: database.path)) == bytes)
        #expect(!FileManager.default.fileExists(atPath: database.path + "-wal"))
    }

    @Test func missingFileIsNotCreatedWhenCreationIsOff() throws {
        let database = TemporaryDatabase()
        for readOnly in [true, false] {
            var configuration = Store.Configuration()
            configuration.createIfMissing = false
            configuration.readOnly = readOnly
            let error = try #require(throws: StoreError.self) { try Store(path: database.path, configuration: configuration) }
            #expect(error.code == .cannotOpen)
            #expect(!FileManager.default.fileExists(atPath: database.path))
        }
    }

    @Test func readOnlyStoreRefusesWrites() throws {
        let database = TemporaryDatabase()
        _ = try database.store(migrations: DemoSchema.migrations)
        var configuration = Store.Configuration()
        configuration.readOnly = true
        let store = try Store(path: database.path, configuration: configuration)
        #expect(throws: StoreError.self) { try store.write { tx in try tx.insert(Person(firstName: "A", lastName: "B")) } }
        #expect(try store.read { db in try db.fetchCount(Person.self) } == 0)
    }

    @Test func unknownTableListsTheTablesThereAre() throws {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: DemoSchema.migrations)
        let error = try #require(throws: StoreError.self) { try store.read { db in try db.fetchRows(table: "persons") } }
        #expect(error.code == .unknownTable)
        #expect(error.message == "unknown table 'persons' (tables: app_state, message, package, package_content, person)")
    }

    @Test func codesPrintTheirNames() {
        #expect("\(StoreError.Code.notFound)" == "notFound (1005)")
        #expect("\(StoreError.Code.constraint)" == "constraint (19)")
        #expect("\(StoreError.Code.internal)" == "internal (2)")
        #expect("\(StoreError.Code(rawValue: 4242))" == "code 4242")
    }
}
