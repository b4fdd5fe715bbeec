import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo
import OpenCombineShim

/// Every commit reaches observers exactly, whoever makes it and whatever it
/// changes: migrations, schema changes, key updates, REPLACE, generated
/// columns, both ways of capturing changes. Expected results come from an
/// independent plain connection, never from Sluice's own fetch.
@Suite(.timeLimit(.minutes(10))) struct CommitPathTests {
    static let captures: [ChangeCapture] = [.preupdateHook, .updateHook]

    static let schema = """
        CREATE TABLE item (id INTEGER PRIMARY KEY, code TEXT UNIQUE, name TEXT, rank INTEGER,
                           doubled INTEGER GENERATED ALWAYS AS (rank * 2) VIRTUAL);
        CREATE TABLE tag (key TEXT PRIMARY KEY, label TEXT, weight REAL);
        CREATE TABLE child (id INTEGER PRIMARY KEY, item_id INTEGER REFERENCES item(id) ON DELETE CASCADE, note TEXT);
        CREATE TRIGGER item_rank AFTER UPDATE OF rank ON item BEGIN
            INSERT INTO child (item_id, note) VALUES (NEW.id, 'rank ' || NEW.rank);
        END;
        """

    static func store(_ capture: ChangeCapture, schema: String = schema) throws -> (Store, PlainConnection) {
        let database = TemporaryDatabase()
        let store = try Store(path: database.path, configuration: Store.Configuration(), capture: capture)
        #expect(reflected(store, "tracker", "some", "broker", "capture") == capture, "the store captures as asked")
        try store.write { tx in try tx.execute(script: schema) }
        return (store, PlainConnection(path: database.path))
    }

    /// Observes dynamic rows and keeps a mirror: the arrays after each event.
    final class RowMirror: @unchecked Sendable {
        // @unchecked Sendable: guarded by `lock`.
        private let lock = NSLock()
        private(set) var token: ObservationToken?
        private var events: [CollectionChange<Row>] = []
        private var array: [[SQLiteValue]] = []
        private var states: [[[SQLiteValue]]] = []
        private var errors: [StoreError] = []

        init(_ results: Results<Row>) {
            token = results.observe(on: DispatchQueue(label: "mirror")) { [weak self] change in
                guard let self else { return }
                self.lock.withLock {
                    self.events.append(change)
                    switch change {
                    case .initial(let rows): self.array = rows.map(\.values)
                    case .update(let rows, _, _, _):
                        change.changeset?.apply(to: &self.array) { rows[$0].values }
                    case .error(let error): self.errors.append(error)
                    }
                    if change.results != nil { self.states.append(self.array) }
                }
            }
        }

        func take() -> (events: [CollectionChange<Row>], states: [[[SQLiteValue]]], errors: [StoreError]) {
            lock.withLock {
                defer { events = []; states = []; errors = [] }
                return (events, states, errors)
            }
        }

        func wait(for count: Int) {
            for _ in 0..<2_000 where lock.withLock({ events.count }) < count { usleep(1_000) }
        }

        /// Waits (up to 30 s: ThreadSanitizer is slow) until the mirror holds
        /// these rows: a sync point that does not depend on timing.
        /// Waits up to 30 s for the mirror to show `rows`; whether it did.
        @discardableResult
        func wait(until rows: [[SQLiteValue]]) -> Bool {
            let deadline = DispatchTime.now() + 30
            while lock.withLock({ array != rows }), DispatchTime.now() < deadline { usleep(500) }
            if lock.withLock({ array != rows }) { print("MIRROR \(lock.withLock { array }) EXPECTED \(rows) EVENTS \(lock.withLock { events.count }) ERRORS \(lock.withLock { errors })") }
            return lock.withLock { array == rows }
        }
    }

    static func settle(_ store: Store) {
        store.waitForObservers()
        for _ in 0..<3 { store.waitForObservers(); usleep(2_000) }
    }

    // MARK: - Exact sequences

    @Test(arguments: captures)
    func migrationEmitsItsOwnChangesetAndNothingLeaksIntoTheNextCommit(capture: ChangeCapture) throws {
        let (store, _) = try Self.store(capture)
        let mirror = RowMirror(store.rows(in: "item").sorted(byKeyPath: "rank"))
        mirror.wait(for: 1)
        _ = mirror.take()
        try store.migrate([Migration(version: 1, name: "add_item", sql: "INSERT INTO item (code, name, rank) VALUES ('a', 'A', 1)")])
        Self.settle(store)
        let migrated = mirror.take().events
        #expect(migrated.compactMap(\.changeset) == [Changeset(insertions: [0])], "the migration's own commit")
        try store.write { tx in try tx.execute(sql: "INSERT INTO tag (key, label) VALUES ('x', 'X')") }
        Self.settle(store)
        #expect(mirror.take().events.isEmpty, "an unrelated commit delivers nothing")
        // A failing migration's rows never reach a later commit either.
        #expect(throws: StoreError.self) {
            try store.migrate([Migration(version: 1, name: "add_item", sql: "INSERT INTO item (code, name, rank) VALUES ('a', 'A', 1)"),
                               Migration(version: 2, name: "broken", sql: "INSERT INTO item (code, name, rank) VALUES ('b', 'B', 2); INSERT INTO nowhere VALUES (1)")])
        }
        try store.write { tx in try tx.execute(sql: "INSERT INTO tag (key, label) VALUES ('y', 'Y')") }
        Self.settle(store)
        #expect(mirror.take().events.isEmpty)
    }

    @Test(arguments: captures)
    func columnAddedWhileObservedIsFollowed(capture: ChangeCapture) throws {
        let (store, plain) = try Self.store(capture)
        try store.write { tx in try tx.execute(sql: "INSERT INTO item (code, name, rank) VALUES ('a', 'A', 1), ('b', 'B', 2)") }
        let mirror = RowMirror(store.rows(in: "item").sorted(byKeyPath: "rank"))
        mirror.wait(for: 1)
        _ = mirror.take()
        // The schema cache follows execute(sql:) too: the new column can be written at once.
        try store.write { tx in
            try tx.execute(sql: "ALTER TABLE item ADD COLUMN nickname TEXT")
            try tx.insert(Row(columns: ["code", "rank", "nickname"], values: ["c", 3, "cee"]), into: "item")
        }
        Self.settle(store)
        var taken = mirror.take()
        #expect(taken.events.compactMap(\.changeset) == [Changeset(insertions: [2], modifications: [0, 1])], "every row gained a column")
        #expect(taken.states.last == (try plain.rows("SELECT * FROM item ORDER BY rank, id")))
        // Another process changes only the new column: a modification.
        try plain.execute("UPDATE item SET nickname = 'bee' WHERE code = 'b'")
        Self.settle(store)
        taken = mirror.take()
        #expect(taken.events.compactMap(\.changeset) == [Changeset(modifications: [1])])
        try store.write { tx in try tx.execute(sql: "UPDATE item SET nickname = 'ay' WHERE code = 'a'") }
        Self.settle(store)
        taken = mirror.take()
        #expect(taken.events.compactMap(\.changeset) == [Changeset(modifications: [0])])
        #expect(taken.states.last == (try plain.rows("SELECT * FROM item ORDER BY rank, id")))
    }

    @Test(arguments: captures)
    func droppedTableIsAnErrorAndRecreatingItStartsOver(capture: ChangeCapture) throws {
        let (store, plain) = try Self.store(capture)
        try store.write { tx in try tx.execute(sql: "INSERT INTO tag (key, label) VALUES ('a', 'A')") }
        let mirror = RowMirror(store.rows(in: "tag").sorted(byKeyPath: "label"))
        mirror.wait(for: 1)
        _ = mirror.take()
        try store.write { tx in try tx.execute(sql: "DROP TABLE tag") }
        Self.settle(store)
        let dropped = mirror.take()
        #expect(dropped.errors.count == 1)
        #expect(dropped.errors.first?.message.contains("tag") == true, "\(dropped.errors)")
        // Re-created with other columns, in another order, by another
        // connection, in one transaction (two autocommit statements would be
        // two commits, and the poller may see the empty table between them).
        try plain.execute("BEGIN; CREATE TABLE tag (label TEXT, key TEXT PRIMARY KEY, extra INTEGER); INSERT INTO tag VALUES ('B', 'b', 7); COMMIT")
        Self.settle(store)
        let recreated = mirror.take()
        guard recreated.events.count == 1, case .initial(let rows)? = recreated.events.first else {
            Issue.record("expected a fresh .initial, got \(recreated.events)")
            return
        }
        let expected = try plain.rows("SELECT * FROM tag ORDER BY label, key")
        #expect(rows.map(\.values) == expected, "events: \(recreated.events)")
    }

    @Test func withoutRowIDAndVirtualTablesAreRefusedClearly() throws {
        let (store, _) = try Self.store(.preupdateHook, schema: "CREATE TABLE pair (a TEXT, b TEXT, PRIMARY KEY (a, b)) WITHOUT ROWID; CREATE VIEW v AS SELECT 1 AS x")
        for table in ["pair", "v"] {
            let mirror = RowMirror(store.rows(in: table))
            mirror.wait(for: 1)
            let errors = mirror.take().errors
            #expect(errors.first?.code == .unsupportedTable, "\(table): \(errors)")
            #expect(errors.first?.message.contains(table) == true)
        }
    }

    @Test(arguments: captures)
    func updatingTheRowIDMovesTheRowAndDeletesTheOldObject(capture: ChangeCapture) throws {
        let (store, plain) = try Self.store(capture, schema: DemoSchema.migrations.map(\.sql).joined(separator: ";\n"))
        try store.write { tx in
            for (id, name) in [(1, "A"), (2, "B"), (3, "C")] as [(Int64, String)] { try tx.insert(Person(id: id, firstName: name, lastName: "X")) }
        }
        let mirror = RowMirror(store.rows(in: "person").sorted(byKeyPath: "id"))
        let events = Mutex<[ObjectChange<Person>]>([])
        let token = store.observe(Person.self, id: 2, on: DispatchQueue(label: "object")) { change in events.withLock { $0.append(change) } }
        mirror.wait(for: 1)
        Self.settle(store)
        _ = mirror.take()
        try store.write { tx in try tx.execute(sql: "UPDATE person SET id = 10 WHERE id = 2") }
        Self.settle(store)
        let taken = mirror.take()
        #expect(taken.events.compactMap(\.changeset) == [Changeset(deletions: [1], insertions: [2])])
        #expect(taken.states.last == (try plain.rows("SELECT * FROM person ORDER BY id")))
        let objectEvents = events.withLock { $0 }
        guard case .deleted? = objectEvents.last else { Issue.record("expected .deleted, got \(objectEvents)"); return }
        _ = token
    }

    @Test(arguments: captures)
    func replaceThroughUniqueAndTextKeysLeavesNoDuplicates(capture: ChangeCapture) throws {
        let (store, plain) = try Self.store(capture)
        try store.write { tx in
            try tx.execute(sql: "INSERT INTO item (code, name, rank) VALUES ('a', 'A', 1), ('b', 'B', 2)")
            try tx.execute(sql: "INSERT INTO tag (key, label) VALUES ('k', 'one'), ('m', 'two')")
        }
        let items = RowMirror(store.rows(in: "item").sorted(byKeyPath: "rank"))
        let tags = RowMirror(store.rows(in: "tag").sorted(byKeyPath: "label"))
        items.wait(for: 1)
        tags.wait(for: 1)
        _ = (items.take(), tags.take())
        try store.write { tx in
            try tx.execute(sql: "INSERT OR REPLACE INTO item (code, name, rank) VALUES ('a', 'A2', 3)")
            try tx.execute(sql: "REPLACE INTO tag (key, label) VALUES ('k', 'zero')")
        }
        Self.settle(store)
        let itemEvents = items.take()
        #expect(itemEvents.states.last == (try plain.rows("SELECT * FROM item ORDER BY rank, id")))
        #expect(itemEvents.events.compactMap(\.changeset) == [Changeset(deletions: [0], insertions: [1])], "a new rowid: a new row")
        let tagEvents = tags.take()
        #expect(tagEvents.states.last == (try plain.rows("SELECT * FROM tag ORDER BY label, key")))
        // The same TEXT PRIMARY KEY is the same row, though REPLACE gave it a
        // new rowid: 'one' became 'zero' and sorts after 'two' now, so it moves.
        #expect(tagEvents.events.compactMap(\.changeset) == [Changeset(deletions: [0], insertions: [1], moves: [.init(from: 0, to: 1)])])
    }

    @Test(arguments: captures)
    func deletingAndReinsertingATextKeyIsAModification(capture: ChangeCapture) throws {
        let (store, _) = try Self.store(capture)
        try store.write { tx in try tx.execute(sql: "INSERT INTO tag (key, label, weight) VALUES ('a', 'A', 1), ('b', 'B', 2)") }
        let tags = RowMirror(store.rows(in: "tag").sorted(byKeyPath: "label"))
        tags.wait(for: 1)
        _ = tags.take()
        try store.write { tx in
            try tx.execute(sql: "DELETE FROM tag WHERE key = 'a'")
            try tx.execute(sql: "INSERT INTO tag (key, label, weight) VALUES ('a', 'A', 5)")
        }
        Self.settle(store)
        #expect(tags.take().events.compactMap(\.changeset) == [Changeset(modifications: [0])])
    }

    @Test(arguments: captures)
    func generatedColumnsKeepPositionsRight(capture: ChangeCapture) throws {
        let (store, plain) = try Self.store(capture)
        try store.write { tx in try tx.execute(sql: "INSERT INTO item (code, name, rank) VALUES ('a', 'A', 1), ('b', 'B', 2), ('c', 'C', 3)") }
        let mirror = RowMirror(store.rows(in: "item").sorted(byKeyPath: "doubled", ascending: false))
        mirror.wait(for: 1)
        _ = mirror.take()
        try store.write { tx in try tx.execute(sql: "UPDATE item SET rank = 10 WHERE code = 'a'") }
        Self.settle(store)
        let taken = mirror.take()
        #expect(taken.events.compactMap(\.changeset) == [Changeset(deletions: [2], insertions: [0], moves: [.init(from: 2, to: 0)])])
        #expect(taken.states.last == (try plain.rows("SELECT * FROM item ORDER BY doubled DESC, id")))
    }

    /// Realm's example: [1,2,3] → [2,3,1] is one move, in-process as from another connection.
    @Test(arguments: captures)
    func bothPathsGiveTheSameMinimalMoves(capture: ChangeCapture) throws {
        let (store, plain) = try Self.store(capture)
        try store.write { tx in try tx.execute(sql: "INSERT INTO item (id, code, rank) VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)") }
        let mirror = RowMirror(store.rows(in: "item").sorted(byKeyPath: "rank"))
        mirror.wait(for: 1)
        _ = mirror.take()
        let rotation = "UPDATE item SET rank = CASE id WHEN 1 THEN 30 WHEN 2 THEN 10 ELSE 20 END"
        try store.write { tx in try tx.execute(sql: rotation) }
        Self.settle(store)
        let own = mirror.take().events.compactMap(\.changeset)
        try plain.execute("UPDATE item SET rank = CASE id WHEN 1 THEN 1 WHEN 2 THEN 2 ELSE 3 END")
        Self.settle(store)
        _ = mirror.take()
        try plain.execute(rotation)
        Self.settle(store)
        let other = mirror.take().events.compactMap(\.changeset)
        // Row 1 moves; rows 2 and 3 stay in place with new ranks: modified.
        let oneMove = Changeset(deletions: [0], insertions: [2], modifications: [1, 2], moves: [.init(from: 0, to: 2)])
        #expect(own == [oneMove], "own commit: \(own)")
        #expect(other == own, "another connection: \(other)")
    }

    /// Another connection's commit to a table the log does not track: the
    /// query's rows are scanned and compared by hashes of all their values;
    /// only rows that differ are re-read. With keyPaths, a change to an
    /// unobserved column reports nothing, a changed sort key a move; more
    /// than the incremental limit re-reads everything.
    @Test func untrackedWritesAreFoundByHashesOfTheRows() throws {
        let (store, plain) = try Self.store(.preupdateHook)
        try store.write { tx in try tx.execute(sql: "INSERT INTO item (id, code, name, rank) VALUES (1, 'a', 'A', 1), (2, 'b', 'B', 2), (3, 'c', 'C', 3)") }
        let events = Mutex<[CollectionChange<Row>]>([])
        let token = store.rows(in: "item").sorted(byKeyPath: "rank").observe(keyPaths: ["name"], on: DispatchQueue(label: "hashes")) { change in
            events.withLock { $0.append(change) }
        }
        Self.settle(store)
        func next(_ sql: String) -> [Changeset] {
            _ = try? plain.execute(sql)
            Self.settle(store)
            return events.withLock { delivered in
                defer { delivered = [] }
                return delivered.compactMap(\.changeset)
            }
        }
        #expect(next("SELECT 1").isEmpty)    // the initial result, taken
        #expect(next("UPDATE item SET code = 'z' WHERE id = 2").isEmpty, "an unobserved column, not a sort key")
        #expect(next("UPDATE item SET rank = 10 WHERE id = 1") == [Changeset(deletions: [0], insertions: [2], moves: [.init(from: 0, to: 2)])])
        #expect(next("UPDATE item SET name = 'BB' WHERE id = 2") == [Changeset(modifications: [0])])
        #expect(next("BEGIN; DELETE FROM item WHERE id = 3; INSERT INTO item (id, code, name, rank) VALUES (4, 'd', 'D', 0); COMMIT")
                == [Changeset(deletions: [1], insertions: [0])])
        // 100 rows: past the incremental limit, everything is re-read and diffed.
        #expect(next("WITH RECURSIVE n(i) AS (SELECT 100 UNION ALL SELECT i + 1 FROM n WHERE i < 199) INSERT INTO item (id, code, name, rank) SELECT i, 'c' || i, 'N', i FROM n")
                == [Changeset(insertions: Array(3...102))])
        #expect(next("BEGIN; UPDATE item SET name = 'M' WHERE id > 150; DELETE FROM item WHERE id = 100; COMMIT")
                == [Changeset(deletions: [3], modifications: Array(54...102))])
        _ = token
    }

    @Test func undecodableValueIsAnErrorThenTheObservationRecovers() throws {
        let (store, plain) = try Self.store(.preupdateHook, schema: DemoSchema.migrations.map(\.sql).joined(separator: ";\n"))
        try store.write { tx in try tx.insert(Person(id: 1, firstName: "A", lastName: "X", age: 30)) }
        let events = Mutex<[CollectionChange<Person>]>([])
        let token = store.objects(Person.self).observe(on: DispatchQueue(label: "typed")) { change in events.withLock { $0.append(change) } }
        Self.settle(store)
        try plain.execute("UPDATE person SET age = 'abc' WHERE id = 1")
        Self.settle(store)
        try plain.execute("UPDATE person SET age = 31 WHERE id = 1")
        Self.settle(store)
        let delivered = events.withLock { $0 }
        #expect(delivered.count == 3, "\(delivered)")
        guard delivered.count == 3, case .error(let error) = delivered[1], case .initial(let people) = delivered[2] else {
            Issue.record("expected initial, error, initial: \(delivered)")
            return
        }
        #expect(error.code == .decoding || error.code == .typeMismatch, "\(error)")
        #expect(people.map(\.age) == [31])
        _ = token
    }

    @Test func mergedChangesThatCancelOutAreNotDelivered() throws {
        final class OneAtATime: Subscriber, @unchecked Sendable {
            typealias Input = CollectionChange<Row>
            typealias Failure = Never
            let received = Mutex<[CollectionChange<Row>]>([])
            let subscription = Mutex<(any Subscription)?>(nil)
            func receive(subscription: any Subscription) {
                self.subscription.withLock { $0 = subscription }
                subscription.request(.max(1))
            }
            func receive(_ input: Input) -> Subscribers.Demand {
                received.withLock { $0.append(input) }
                return .none
            }
            func receive(completion: Subscribers.Completion<Never>) {}
        }
        let (store, _) = try Self.store(.preupdateHook)
        let subscriber = OneAtATime()
        store.rows(in: "item").changesetPublisher(keyPaths: nil, on: DispatchQueue(label: "slow")).subscribe(subscriber)
        Self.settle(store)
        #expect(subscriber.received.withLock { $0 }.count == 1, "the initial result")
        // No demand: an insertion and the deletion of the same row wait, merged.
        try store.write { tx in try tx.execute(sql: "INSERT INTO item (id, code, rank) VALUES (1, 'a', 1)") }
        try store.write { tx in try tx.execute(sql: "DELETE FROM item WHERE id = 1") }
        Self.settle(store)
        subscriber.subscription.withLock { $0 }?.request(.max(1))
        Self.settle(store)
        #expect(subscriber.received.withLock { $0 }.count == 1, "together they change nothing: nothing is delivered")
        // The next real change still arrives.
        try store.write { tx in try tx.execute(sql: "INSERT INTO item (id, code, rank) VALUES (2, 'b', 1)") }
        Self.settle(store)
        #expect(subscriber.received.withLock { $0 }.last?.changeset == Changeset(insertions: [0]))
        subscriber.subscription.withLock { $0 }?.cancel()
    }
}
