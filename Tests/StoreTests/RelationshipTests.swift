import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

/// Relationship paths through foreign keys: to-one paths, to-many
/// aggregates and quantifiers, in query strings and the typed API, and
/// live queries over them that stay exact when either table changes.
@Suite(.timeLimit(.minutes(10))) struct RelationshipTests {
    /// Ann (Oslo) receives packages 1 (500 g + 1500 g) and 3 (empty); Bob (Rome) receives 2 (10 + 20 + 30 g), sent by Ann.
    static func store() throws -> (Store, String) {
        let database = TemporaryDatabase()
        let store = try database.store(migrations: DemoSchema.migrations)
        try store.write { tx in
            try tx.execute(script: """
                INSERT INTO person (id, first_name, last_name, city) VALUES (1, 'Ann', 'A', 'Oslo'), (2, 'Bob', 'B', 'Rome');
                INSERT INTO package (id, recipient_id, sender_id, created_at) VALUES (1, 1, 2, '2026-01-01 00:00:01'), (2, 2, 1, '2026-01-01 00:00:02'), (3, 1, NULL, '2026-01-01 00:00:03');
                INSERT INTO package_content (package_id, title, weight, position) VALUES (1, 'a', 500, 0), (1, 'b', 1500, 1),
                    (2, 'c', 10, 0), (2, 'd', 20, 1), (2, 'e', 30, 2);
                """)
        }
        return (store, database.path)
    }

    static func ids(_ results: Results<Package>) throws -> [Int64] {
        try results.fetch().compactMap(\.id)
    }

    @Test(arguments: [
        ("recipient.city == 'Oslo'", [1, 3]),
        ("recipientID.city == 'Oslo'", [1, 3]),
        ("sender.city ==[c] 'OSLO'", [2]),
        ("sender.city == nil", [3]),
        ("ANY contents.weight > 1000", [1]),
        ("contents.weight > 1000", [1]),
        ("SOME contents.title IN {'c', 'z'}", [2]),
        ("ALL contents.weight < 100", [2, 3]),
        ("NONE contents.weight > 100", [2, 3]),
        ("contents.@count > 2", [2]),
        ("contents.@count == 0", [3]),
        ("contents.@sum.weight > 1000", [1]),
        ("contents.@sum.weight == 0", [3]),
        ("contents.@avg.weight == 20", [2]),
        ("contents.@max.weight >= 1500 OR recipient.city == 'Rome'", [1, 2]),
        ("package_content(package_id).@min.weight == 10", [2]),
        ("NOT (recipient.city == 'Oslo')", [2]),
        // NSPredicate's SUBQUERY: one related row satisfies all of the predicate.
        ("SUBQUERY(contents, $c, $c.weight > 400 AND $c.title == 'a').@count > 0", [1]),
        ("SUBQUERY(contents, $c, $c.weight > 1000 AND $c.title == 'a').@count > 0", []),
        ("SUBQUERY(contents, $c, $c.weight > 5).@count == 3", [2]),
        ("SUBQUERY(contents, $c, $c.weight > 15).@count >= 2", [1, 2]),
        ("SUBQUERY(contents, $c, $c.weight > 25).@count < 2", [2, 3]),
        ("SUBQUERY(contents, $c, $c.weight > 15).@count == 0", [3]),
        ("subquery(contents,$x,$x.title IN {'a','c'} OR $x.weight >= 1500).@COUNT != 1", [1, 3]),
        ("SUBQUERY(package_content(package_id), $c, NOT ($c.weight < 20)).@count == 2 AND recipient.city == 'Rome'", [2]),
    ] as [(String, [Int64])])
    func queryStringPaths(query: String, expected: [Int64]) throws {
        let (store, _) = try Self.store()
        #expect(try Self.ids(store.objects(Package.self).filter(query)) == expected, "\(query)")
    }

    @Test func typedPathsCompileToTheSameQueries() throws {
        let (store, _) = try Self.store()
        let packages = store.objects(Package.self)
        #expect(try Self.ids(packages.where { $0.related(\.recipientID, Person.self).city == "Oslo" }) == [1, 3])
        #expect(try Self.ids(packages.where { $0.children(\PackageContent.packageID).count > 2 }) == [2])
        #expect(try Self.ids(packages.where { $0.children(\PackageContent.packageID).sum(\.weight) > 1000 }) == [1])
        #expect(try Self.ids(packages.where { $0.children(\PackageContent.packageID).any { $0.weight > 1000 } }) == [1])
        #expect(try Self.ids(packages.where { $0.children(\PackageContent.packageID).all { $0.weight < 100 } }) == [2, 3])
        // SUBQUERY's meaning: one row must satisfy both.
        #expect(try Self.ids(packages.where { $0.children(\PackageContent.packageID).any { $0.weight > 400 && $0.title == "a" } }) == [1])
        #expect(try Self.ids(packages.where { $0.children(\PackageContent.packageID).any { $0.weight > 1000 && $0.title == "a" } }) == [])
        // SUBQUERY(contents, $c, ...).@count, typed.
        #expect(try Self.ids(packages.where { $0.children(\PackageContent.packageID).count { $0.weight > 15 } >= 2 }) == [1, 2])
        #expect(try Self.ids(packages.where { $0.children(\PackageContent.packageID).count { $0.weight > 25 } < 2 }) == [2, 3])
        #expect(try Self.ids(packages.where { $0.children(\PackageContent.packageID).count { $0.weight > 400 && $0.title == "a" } > 0 }) == [1])
        #expect(try Self.ids(packages.where { $0.children(\PackageContent.packageID).count { $0.weight > 5 } == 0 }) == [3])
        #expect(packages.where { $0.related(\.recipientID, Person.self).city == "Oslo" }.count == 2, "count(*) with the path")
    }

    @Test(arguments: [
        ("recipient.town == 'x'", "unknown column 'town' in table person"),
        ("shipments.@count > 1", "unknown relationship 'shipments' of table package"),
        ("contents.@sum == 3", "@sum needs a column after it"),
        ("contents.@sum.grams > 3", "unknown column 'grams' in table package_content"),
        ("ANY recipient.city == 'Oslo'", "ANY needs a to-many relationship; 'recipient' is to-one"),
        ("ANY contents.weight > id", "compare the related rows' columns with values"),
        ("SUBQUERY(contents, $c, $c.weight > id).@count > 0", "in SUBQUERY(contents, ...), compare the related rows' columns with values"),
        ("SUBQUERY(contents, $c, $d.weight > 1).@count > 0", "unknown variable $d"),
        ("SUBQUERY(contents, $c, $c > 1).@count > 0", "compare a column of the related row, as in $c.weight"),
        ("SUBQUERY(contents, $c, $c.weight > 1) > 0", "expected .@count after ')'"),
        ("SUBQUERY(contents, c, c.weight > 1).@count > 0", "expected a variable such as $c"),
        ("SUBQUERY(contents, $c, $c.weight > 1).@count", "expected a comparison after SUBQUERY(...).@count"),
        ("SUBQUERY(recipient, $r, $r.city == 'Oslo').@count > 0", "SUBQUERY needs a to-many relationship; 'recipient' is to-one"),
        ("SUBQUERY(recipient, $r, $r.city == 'Oslo').@count > 1", "SUBQUERY needs a to-many relationship; 'recipient' is to-one"),
        ("SUBQUERY(contents, $c, $c.grams > 1).@count > 0", "unknown column 'grams' in table package_content"),
        ("$c.weight > 1", "unknown variable $c"),
    ])
    func badPathsAreErrorsWithACaret(query: String, message: String) throws {
        let (store, _) = try Self.store()
        do {
            _ = try store.objects(Package.self).filter(query).fetch()
            Issue.record("expected an error for \(query)")
        } catch let error as StoreError {
            #expect(error.message.contains(message), "\(error.message)")
            #expect(error.message.contains("^"), "a caret under the path: \(error.message)")
        }
    }

    /// Exact changesets when only the related table changes: a recipient moving in and out of Oslo, a content row
    /// moving between packages (the package it left is found through the state before the commit), an unrelated change.
    @Test func relatedTableChangesGiveExactChangesets() throws {
        let (store, _) = try Self.store()
        let packages = store.objects(Package.self).sorted(by: \.id)
        let toOslo = ChangeRecorder(try packages.filter("recipient.city == 'Oslo'"))
        let heavy = ChangeRecorder(try packages.filter("SUBQUERY(contents, $c, $c.weight > 1000).@count > 0"))
        store.waitForObservers()
        #expect(toOslo.take().last?.results.map { $0.compactMap(\.id) } == [1, 3])
        #expect(heavy.take().last?.results.map { $0.compactMap(\.id) } == [1])

        func next(_ recorder: ChangeRecorder<Package>) -> (Changes?, [Int64]?) {
            let last = recorder.take().last
            return (last.flatMap(Changes.init), last?.results.map { $0.compactMap(\.id) })
        }
        try store.write { tx in try tx.execute(sql: "UPDATE person SET city = 'Oslo' WHERE id = 2") }   // Bob: package 2
        store.waitForObservers()
        #expect(next(toOslo) == (Changes(insertions: [1]), [1, 2, 3]))
        try store.write { tx in try tx.execute(sql: "UPDATE person SET city = 'Rome' WHERE id = 1") }   // Ann: packages 1 and 3
        store.waitForObservers()
        #expect(next(toOslo) == (Changes(deletions: [0, 2]), [2]))
        try store.write { tx in try tx.execute(sql: "UPDATE person SET last_name = 'Z' WHERE id = 2") }   // not the city
        try store.write { tx in try tx.execute(sql: "UPDATE package_content SET package_id = 2 WHERE title = 'b'") }   // 1500 g: 1 → 2
        store.waitForObservers()
        #expect(next(toOslo) == (nil, nil), "nothing it reads changed")
        #expect(next(heavy) == (Changes(deletions: [0], insertions: [0]), [2]))
        try store.write { tx in try tx.execute(sql: "DELETE FROM package_content WHERE title = 'b'") }
        store.waitForObservers()
        #expect(next(heavy) == (Changes(deletions: [0]), []))
        withExtendedLifetime((toOslo, heavy)) {}
    }

    /// A live query over packages by their recipient's city and their contents' weight stays exact when people, packages
    /// and contents change: by this store, another connection and the sqlite3 shell, compared with a hand-written JOIN.
    @Test(arguments: [(ChangesetPropertyTests.Writer.own, 150, UInt64(31)), (.otherConnection, 60, 32), (.sqliteShell, 80, 33)])
    func liveRelationshipQueriesStayExact(writer: ChangesetPropertyTests.Writer, transactions: Int, seed: UInt64) throws {
        let (store, path) = try Self.store()
        let plain = PlainConnection(path: path)
        let packages = store.objects(Package.self)
        let mirrors: [(Mirror<Package>, String)] = [
            (Mirror("to Oslo", try packages.filter("recipient.city ==[c] 'oslo'").sorted(byKeyPath: "created_at")),
             "SELECT package.id FROM package JOIN person ON person.id = package.recipient_id WHERE lower(person.city) = 'oslo' ORDER BY package.created_at, package.id"),
            (Mirror("heavy", try packages.filter("contents.@sum.weight > 1000 OR ANY contents.title == 'gift'").sorted(byKeyPath: "id")),
             "SELECT id FROM package p WHERE (SELECT IFNULL(sum(weight), 0) FROM package_content WHERE package_id = p.id) > 1000 OR EXISTS (SELECT 1 FROM package_content WHERE package_id = p.id AND title = 'gift') ORDER BY id"),
            (Mirror("busy", packages.where { $0.children(\PackageContent.packageID).count >= 2 }.sorted(by: \.createdAt, ascending: false)),
             "SELECT id FROM package p WHERE (SELECT count(*) FROM package_content WHERE package_id = p.id) >= 2 ORDER BY created_at DESC, id"),
            (Mirror("two heavy or gifts", try packages.filter("SUBQUERY(contents, $c, $c.weight > 300 OR $c.title ==[c] 'gift').@count >= 2").sorted(byKeyPath: "id")),
             "SELECT id FROM package p WHERE (SELECT count(*) FROM package_content WHERE package_id = p.id AND (weight > 300 OR lower(title) = 'gift')) >= 2 ORDER BY id"),
        ]
        var delivered = [0, 0, 0, 0]
        func check(_ context: String) throws {
            store.waitForObservers()
            for (offset, (mirror, sql)) in mirrors.enumerated() {
                delivered[offset] += mirror.catchUp()
                let expected = try plain.rows(sql).map { Int64(sqliteValue: $0[0]) ?? -1 }
                #expect(mirror.array.compactMap(\.id) == expected, "\(mirror.name) (\(context))")
            }
        }
        try check("initial")
        var random = SplitMix(seed: seed)
        let cities = ["Oslo", "oslo", "Rome", "Bergen"]
        let titles = ["gift", "book", "Gift"]
        let other = writer == .otherConnection ? try Store(path: path) : nil
        for index in 0..<transactions {
            var statements: [String] = []
            for _ in 0..<(1 + random.next(3)) {
                let person = 1 + random.next(6), package = 1 + random.next(8)
                switch random.next(11) {
                case 0: statements.append("INSERT OR IGNORE INTO person (id, first_name, last_name, city) VALUES (\(person), 'P', 'Q', '\(cities[random.next(cities.count)])')")
                case 1: statements.append("UPDATE person SET city = '\(cities[random.next(cities.count)])' WHERE id = \(person)")
                case 2: statements.append("INSERT OR IGNORE INTO package (id, recipient_id, created_at) SELECT \(package), id, '2026-01-01 00:00:\(10 + random.next(50))' FROM person ORDER BY random() LIMIT 1")
                case 3: statements.append("UPDATE package SET recipient_id = (SELECT id FROM person ORDER BY random() LIMIT 1) WHERE id = \(package)")
                case 4: statements.append("DELETE FROM package WHERE id = \(package)")
                case 5, 6: statements.append("INSERT INTO package_content (package_id, title, weight, position) SELECT id, '\(titles[random.next(titles.count)])', \(random.next(1200)), 0 FROM package WHERE id = \(package)")
                case 7: statements.append("UPDATE package_content SET weight = \(random.next(1500)) WHERE id IN (SELECT id FROM package_content ORDER BY random() LIMIT 1)")
                case 8: statements.append("DELETE FROM package_content WHERE id IN (SELECT id FROM package_content ORDER BY random() LIMIT 1)")
                // A content row moves to another package: both packages are re-checked (the old one read before the commit).
                case 9: statements.append("UPDATE package_content SET package_id = (SELECT id FROM package ORDER BY random() LIMIT 1) WHERE id IN (SELECT id FROM package_content ORDER BY random() LIMIT 1)")
                default: statements.append("DELETE FROM person WHERE id = \(person)")   // cascades to its packages and their contents
                }
            }
            let script = statements.joined(separator: ";\n") + ";"
            switch writer {
            case .otherConnection:
                try other?.write { tx in try tx.execute(script: script) }
            case .sqliteShell:
                try SQLiteShell.run(path: path, "PRAGMA foreign_keys = ON;\nBEGIN;\n" + script + "\nCOMMIT;")
            default:
                try store.write { tx in try tx.execute(script: script) }
            }
            try check("\(writer) transaction \(index): \(statements)")
        }
        // Not vacuous: every query's result changed (the sqlite3 shell's workload picks rows with
        // random(), so how often each changes varies from run to run).
        #expect(delivered.allSatisfy { $0 > 0 }, "every query's result changed: \(delivered)")
    }
}

/// A small deterministic random source for workloads.
struct SplitMix {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }
}
