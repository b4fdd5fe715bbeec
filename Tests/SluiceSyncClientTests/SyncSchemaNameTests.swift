import SluiceSyncProtocol
import Testing

/// A schema finds tables and columns by name as SQLite does: equal but for the case of
/// ASCII letters, and nothing else.
@Suite(.timeLimit(.minutes(10))) struct SyncSchemaNameTests {
    @Test func namesDifferingInASCIICaseAreOne() {
        let pairs: [(String, String, Bool)] = [
            ("age", "age", true), ("age", "AGE", true), ("First_Name", "first_name", true), ("", "", true),
            ("age", "ages", false), ("ages", "age", false), ("age", "", false),
            // Not letters: '@' (0x40) and '`' (0x60) differ by the case bit only.
            ("@", "`", false), ("[", "{", false), ("a_1", "A_1", true), ("a_1", "a-1", false),
            // SQLite folds ASCII letters only.
            ("É", "é", false), ("café", "CAFé", true), ("café", "CAFÉ", false),
        ]
        for (a, b, same) in pairs {
            #expect(SyncSchema.sameName(a, b) == same, "\(a) / \(b)")
            #expect(SyncSchema.sameName(b, a) == same, "\(b) / \(a)")
        }
    }

    @Test func aChangeIsNamedAsTheSchemaSpellsIt() throws {
        let schema = SyncSchema(tables: [
            SyncSchema.Table(name: "Person", columns: [
                SyncSchema.Column(name: "first_name", type: .text, isNullable: false),
                SyncSchema.Column(name: "Age", type: .integer, isNullable: true),
            ]),
        ])
        let change = SyncChange(table: "PERSON", id: "p1", op: .insert, values: ["FIRST_NAME": .text("Ada"), "age": .integer(36)])
        let normalized = try schema.normalized(change)
        #expect(normalized.table == "Person")
        #expect(normalized.values == ["first_name": .text("Ada"), "Age": .integer(36)])
        // A NOT NULL column missing, whatever the case of the others.
        #expect(throws: SyncErrorBody.self) {
            try schema.normalized(SyncChange(table: "person", id: "p2", op: .insert, values: ["AGE": .integer(1)]))
        }
        // One column twice, in two cases.
        #expect(throws: SyncErrorBody.self) {
            try schema.normalized(SyncChange(table: "person", id: "p3", op: .update, values: ["age": .integer(1), "AGE": .integer(2)]))
        }
        #expect(schema.table(named: "persons") == nil && schema.table(named: "person")?.column(named: "FIRST_name")?.name == "first_name")
    }

    /// Values under the names the schema spells are kept as they are, and checked as any:
    /// an unknown column, a value of another type, a NULL in a NOT NULL column.
    @Test func valuesSpelledAsTheSchemaSpellsThemAreCheckedAsAny() throws {
        let schema = SyncSchema(tables: [
            SyncSchema.Table(name: "person", columns: [
                SyncSchema.Column(name: "first_name", type: .text, isNullable: false),
                SyncSchema.Column(name: "age", type: .integer, isNullable: true),
            ]),
        ])
        let values: [String: SyncValue] = ["first_name": .text("Ada"), "age": .integer(36)]
        #expect(try schema.normalized(SyncChange(table: "person", id: "p1", op: .insert, values: values)).values == values)
        let refused: [([String: SyncValue], String)] = [
            (["first_name": .text("Ada"), "height": .integer(170)], "unknown column 'height'"),
            (["first_name": .text("Ada"), "age": .text("old")], "person.age of p1: text where the schema wants integer"),
            (["first_name": .null], "person.first_name of p1: null"),
            (["FIRST_NAME": .text("Ada"), "age": .text("old")], "person.age of p1: text where the schema wants integer"),
        ]
        for (values, message) in refused {
            #expect { try schema.normalized(SyncChange(table: "person", id: "p1", op: .update, values: values)) } throws: { error in
                (error as? SyncErrorBody)?.message.contains(message) == true
            }
        }
    }
}
