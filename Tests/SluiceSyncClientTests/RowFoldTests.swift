import SluiceSyncPolicy
import SluiceSyncProtocol
import Testing

/// A transaction writes a row twice when two of its changes name one id of one table, the
/// table's name compared as SQLite does (case of ASCII letters aside).
@Suite(.timeLimit(.minutes(10))) struct RowFoldTests {
    @Test func aRowWrittenTwiceIsFoundWhateverTheTablesSpelling() {
        func change(_ table: String, _ id: String) -> SyncChange { SyncChange(table: table, id: id, op: .update, values: ["a": .integer(1)]) }
        #expect(!RowFold.writesARowTwice([]))
        #expect(!RowFold.writesARowTwice([change("person", "1"), change("person", "2"), change("message", "1")]))
        #expect(RowFold.writesARowTwice([change("person", "1"), change("message", "1"), change("person", "1")]))
        #expect(RowFold.writesARowTwice([change("person", "1"), change("PERSON", "1")]))
        #expect(!RowFold.writesARowTwice([change("person", "1"), change("person", "I")]))
        // Random ones, against pairs compared one by one.
        var random = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let changes = (0..<Int.random(in: 0...12, using: &random)).map { _ in
                change(["person", "Person", "message"].randomElement(using: &random) ?? "", String(Int.random(in: 0..<8, using: &random)))
            }
            let twice = changes.indices.contains { i in
                changes.indices.contains { j in j > i && changes[i].id == changes[j].id && changes[i].table.lowercased() == changes[j].table.lowercased() }
            }
            #expect(RowFold.writesARowTwice(changes) == twice, "\(changes.map { "\($0.table) \($0.id)" })")
        }
    }
}
