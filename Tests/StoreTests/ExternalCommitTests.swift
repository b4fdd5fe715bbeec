import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice

/// Commits made elsewhere (another connection, the sqlite3 shell, a second
/// `Store` on the file, a store opened read-only) reach observers through
/// file events, one changeset per commit heard, exactly; nothing runs while
/// nothing is observed. Expected rows come from a plain connection.
@Suite(.timeLimit(.minutes(10))) struct ExternalCommitTests {
    static let schema = """
        CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT, rank INTEGER);
        CREATE TABLE note (id INTEGER PRIMARY KEY, body TEXT);
        """
    static let query = "SELECT * FROM item ORDER BY rank, id"

    /// A store with ten items ranked 0, 10, ... 90, and a plain connection.
    static func store(_ capture: ChangeCapture = .preupdateHook) throws -> (Store, PlainConnection) {
        let (store, plain) = try CommitPathTests.store(capture, schema: schema)
        try store.write { tx in
            for id in 1...10 { try tx.execute(sql: "INSERT INTO item VALUES (?, ?, ?)", arguments: [.integer(Int64(id)), .text("item \(id)"), .integer(Int64((id - 1) * 10))]) }
        }
        return (store, plain)
    }

    static func mirror(_ store: Store, _ plain: PlainConnection) throws -> CommitPathTests.RowMirror {
        let mirror = CommitPathTests.RowMirror(store.rows(in: "item").sorted(byKeyPath: "rank"))
        #expect(mirror.wait(until: try plain.rows(query)))
        _ = mirror.take()
        return mirror
    }

    /// The changesets of events, compactly.
    static func changes(_ events: [CollectionChange<Row>]) -> [Changes] {
        events.compactMap { Changes($0) }
    }

    @Test(arguments: CommitPathTests.captures)
    func eachForeignCommitHeardIsOneExactChangeset(_ capture: ChangeCapture) throws {
        let (store, plain) = try Self.store(capture)
        try store.trackForeignWriters(tables: ["item"])
        let mirror = try Self.mirror(store, plain)
        // Twenty commits by another connection, each moving one row to the
        // end (rank 100, 101, ...): each is heard on its own and delivered
        // as one move and one modification.
        for commit in 0..<20 {
            let id = commit % 10 + 1
            try plain.execute("UPDATE item SET rank = \(100 + commit) WHERE id = \(id)")
            #expect(mirror.wait(until: try plain.rows(Self.query)))
        }
        let events = mirror.take().events
        #expect(events.count == 20, "one changeset per commit")
        for (commit, change) in Self.changes(events).enumerated() {
            #expect(change == Changes(deletions: [0], insertions: [9], moves: [[0, 9]]), "commit \(commit)")
        }
    }

    @Test func aBurstFromTheShellIsDeliveredInCommittedStatesOnly() throws {
        let (store, plain) = try Self.store()
        try store.trackForeignWriters(tables: ["item"])
        let mirror = try Self.mirror(store, plain)
        // Forty commits in one shell process, as fast as it runs them.
        let script = (0..<40).map { "UPDATE item SET rank = \(200 + $0) WHERE id = \($0 % 10 + 1);" }.joined(separator: "\n")
        try SQLiteShell.run(path: store.path, script)
        #expect(mirror.wait(until: try plain.rows(Self.query)))
        CommitPathTests.settle(store)
        let taken = mirror.take()
        #expect(taken.errors.isEmpty)
        #expect((1...40).contains(taken.events.count), "at most one changeset per commit: \(taken.events.count)")
        // Every delivered state is one the shell committed, later than the last.
        var rows: [[SQLiteValue]] = (1...10).map { [.integer(Int64($0)), .text("item \($0)"), .integer(Int64(($0 - 1) * 10))] }
        var committed: [[[SQLiteValue]]] = []
        for commit in 0..<40 {
            rows[commit % 10][2] = .integer(Int64(200 + commit))
            committed.append(rows.sorted { (Int64(sqliteValue: $0[2]) ?? 0, Int64(sqliteValue: $0[0]) ?? 0) < (Int64(sqliteValue: $1[2]) ?? 0, Int64(sqliteValue: $1[0]) ?? 0) })
        }
        var last = -1
        for state in taken.states {
            let index = committed.firstIndex(of: state)
            #expect(index != nil, "a state the shell never committed")
            if let index {
                #expect(index > last, "states in commit order")
                last = index
            }
        }
        #expect(last == 39)
    }

    /// The shell's back-to-back commits can land in one millisecond, and its
    /// triggers then log them as one transaction: a commit can add rows to
    /// the newest logged transaction after a reader saw it. History read
    /// while the shell runs (`changes(since:)` and `transactions(from:)`)
    /// still holds every commit once, because a transaction is handed out
    /// only when sealed.
    @Test func historyReadWhileTheShellCommitsHoldsEveryCommit() async throws {
        let (store, plain) = try Self.store()
        try store.trackForeignWriters(tables: ["item"])
        let start = try store.currentToken
        let commits = 200
        let script = (0..<commits).map { "UPDATE item SET rank = \(1_000 + $0) WHERE id = \($0 % 10 + 1);" }.joined(separator: "\n")
        let streamed = Task {
            var ranks: [Int64] = []
            for try await transaction in store.transactions(from: start) {
                ranks += transaction.changes.compactMap { try? $0.newValue("rank", as: Int64.self) }
                if ranks.count >= commits { break }
            }
            return ranks
        }
        let shellEnded = Flag()
        let shell = Task.detached {
            defer { shellEnded.set() }
            try SQLiteShell.run(path: store.path, script)
        }
        var cursor = start
        var read: [Int64] = []
        while true {
            let ended = shellEnded.isSet    // one more read after the shell ended
            for transaction in try store.changes(since: cursor) {
                read += try transaction.changes.compactMap { try $0.newValue("rank", as: Int64.self) }
                cursor = transaction.token
            }
            if ended { break }
            // Suspended, not blocking: the shell's task needs a thread of the pool too.
            try await Task.sleep(for: .microseconds(200))
        }
        try await shell.value
        let expected = (0..<commits).map { Int64(1_000 + $0) }
        #expect(Set(expected).subtracting(read).sorted() == [], "no commit's change is missing")
        #expect(read == expected, "every commit's change, once, in order")
        let timeout = Task {
            try await Task.sleep(nanoseconds: 30_000_000_000)
            streamed.cancel()    // ends the stream: a missing change fails rather than hangs
        }
        let stream = try await streamed.value
        timeout.cancel()
        #expect(Set(expected).subtracting(stream).sorted() == [], "no commit's change is missing from the stream")
        #expect(stream == expected)
        #expect(try plain.rows("SELECT max(rank) FROM item") == [[.integer(Int64(999 + commits))]])
    }

    final class Flag: @unchecked Sendable {
        // @unchecked Sendable: `value` is touched only under `lock`.
        private let lock = NSLock()
        private var value = false
        func set() { lock.withLock { value = true } }
        var isSet: Bool { lock.withLock { value } }
    }

    @Test(arguments: CommitPathTests.captures)
    func aSecondStoreOnTheFileIsReadExactlyFromTheLog(_ capture: ChangeCapture) throws {
        let (store, plain) = try Self.store(capture)
        let other = try Store(path: store.path)
        let counter = CommitCounter { try? Connection(path: store.path, mode: .readWrite) }
        let db = Database(connection: try Connection(path: store.path, mode: .readOnly), isReadOnly: true)
        func snapshot() -> (ChangeLog.Position, UInt32)? {
            let before = counter.read()
            try? db.begin(immediate: false)
            defer { db.rollback() }
            guard var position = ChangeLog.position(db), let before, before == counter.read() else { return nil }
            position.commit = before
            return (position, before)
        }
        func changes(after position: ChangeLog.Position) -> ChangedRows? {
            let commit = counter.read()
            try? db.begin(immediate: false)
            defer { db.rollback() }
            return try? ChangeLog.changes(after: position, on: db, commit: commit).0
        }
        let (start, _) = try #require(snapshot())
        // Two commits by the other store, none tracked: the log names both.
        try other.write { tx in try tx.execute(sql: "UPDATE item SET rank = 5 WHERE id = 3") }
        try other.write { tx in try tx.execute(sql: "INSERT INTO note VALUES (1, 'x')") }
        let logged = try #require(changes(after: start))
        #expect(logged.change(in: "item") == .rows([3]))
        #expect(logged.change(in: "note") == .rows([1]))
        #expect(!logged.isUnknown)
        // A commit the log does not name (the shell, untracked) in between: unknown again.
        let (middle, _) = try #require(snapshot())
        try SQLiteShell.run(path: store.path, "UPDATE item SET rank = 6 WHERE id = 4;")
        try other.write { tx in try tx.execute(sql: "UPDATE item SET rank = 7 WHERE id = 5") }
        let mixed = try #require(changes(after: middle))
        #expect(mixed.change(in: "item") == .unknown && mixed.change(in: "note") == .unknown)
        // And the live query of one store follows the other's commits incrementally.
        let mirror = try Self.mirror(store, plain)
        try other.write { tx in try tx.execute(sql: "UPDATE item SET name = 'renamed' WHERE id = 8") }
        #expect(mirror.wait(until: try plain.rows(Self.query)))
        try other.write { tx in try tx.execute(sql: "DELETE FROM item WHERE id = 1") }
        #expect(mirror.wait(until: try plain.rows(Self.query)))
        let events = mirror.take().events
        #expect(Self.changes(events) == [Changes(modifications: [7]), Changes(deletions: [0])])
    }

    @Test func aReadOnlyStoreHearsEveryCommitAndNothingElse() throws {
        let (store, plain) = try Self.store()
        var configuration = Store.Configuration()
        configuration.readOnly = true
        let readOnly = try Store(path: store.path, configuration: configuration)
        let mirror = try Self.mirror(readOnly, plain)
        try store.write { tx in try tx.execute(sql: "UPDATE item SET rank = -1 WHERE id = 10") }
        #expect(mirror.wait(until: try plain.rows(Self.query)))
        try plain.execute("UPDATE item SET name = 'plain' WHERE id = 2")
        #expect(mirror.wait(until: try plain.rows(Self.query)))
        try SQLiteShell.run(path: store.path, "DELETE FROM item WHERE id = 5;")
        #expect(mirror.wait(until: try plain.rows(Self.query)))
        #expect(Self.changes(mirror.take().events) == [
            Changes(deletions: [9], insertions: [0], moves: [[9, 0]]), Changes(modifications: [2]), Changes(deletions: [5]),
        ])
    }

    @Test func aCommitThatChangesNothingObservedDeliversNothing() throws {
        let (store, plain) = try Self.store()
        let mirror = try Self.mirror(store, plain)
        // Another connection and the shell write a table nobody observes.
        try plain.execute("INSERT INTO note VALUES (1, 'plain')")
        try SQLiteShell.run(path: store.path, "INSERT INTO note VALUES (2, 'shell');")
        // A second store writes it too (logged: read exactly, nothing for `item`).
        try Store(path: store.path).write { tx in try tx.execute(sql: "INSERT INTO note VALUES (3, 'store')") }
        CommitPathTests.settle(store)
        try plain.execute("UPDATE item SET name = 'seen' WHERE id = 1")
        #expect(mirror.wait(until: try plain.rows(Self.query)))
        #expect(Self.changes(mirror.take().events) == [Changes(modifications: [0])])
    }

    /// Another connection commits, and an observation starts (on the
    /// observation queue, or at once on the caller's thread) before the
    /// store has heard of the commit: the observations already running are
    /// brought to the new one's snapshot with that commit's changes, and
    /// their snapshots read every row they hold. (Before, the new
    /// observation's snapshot counted as heard and the running ones never
    /// saw the commit: a deleted row stayed in them, and once their reads
    /// moved on, reading it failed, or trapped through the subscript.)
    @Test(arguments: [ObservationScheduling.async, .immediate], [false, true])
    func anObservationStartingBeforeACommitIsHeardBringsTheOthersAlong(_ scheduling: ObservationScheduling, tracked: Bool) throws {
        let (store, plain) = try Self.store()
        if tracked { try store.trackForeignWriters(tables: ["item"]) }    // the log names the rows: no re-read
        let running = store.rows(in: "item").sorted(byKeyPath: "rank")
        let latest = Mutex<ResultsSnapshot<Row>?>(nil)
        let runningQueue = DispatchQueue(label: "running"), secondQueue = DispatchQueue(label: "second")
        /// Waits until both observations have received what was delivered so far.
        func settle() {
            store.waitForObservers()
            runningQueue.sync {}
            secondQueue.sync {}
        }
        let token = running.observe(on: runningQueue) { change in
            if let results = change.results { latest.withLock { $0 = results } }
        }
        defer { token.invalidate() }
        settle()
        // The commit watch is held back while the commit lands and the new observation starts.
        let commits = store.observationCenter.commits
        let held = DispatchSemaphore(value: 0), holding = DispatchSemaphore(value: 0)
        commits.queue.async { holding.signal(); held.wait() }
        holding.wait()
        try plain.execute("DELETE FROM item WHERE id = 1; UPDATE item SET rank = 95 WHERE id = 2")
        let secondEvents = Mutex<[CollectionChange<Row>]>([])
        let second = store.rows(in: "item").sorted(byKeyPath: "rank").observe(on: secondQueue, scheduling: scheduling) { change in
            secondEvents.withLock { $0.append(change) }
        }
        defer { second.invalidate() }
        store.observationCenter.drain()
        held.signal()
        settle()
        let snapshot = try #require(latest.withLock { $0 })
        let rows = try snapshot.elements(in: 0..<snapshot.count).map(\.values)
        #expect(rows == (try plain.rows(Self.query)), "the running observation saw the commit")
        // The new one started after the commit: its first state holds it, and nothing more comes.
        #expect(secondEvents.withLock { $0.count } == 1)
        #expect(try secondEvents.withLock { $0.first?.results }.map { try $0.elements(in: 0..<$0.count).map(\.values) } == rows)
        // A later commit moves the running observation's reads forward: every row it holds is still read.
        try plain.execute("UPDATE item SET name = 'later' WHERE id = 3")
        settle()
        let later = try #require(latest.withLock { $0 })
        #expect(try later.elements(in: 0..<later.count).map(\.values) == (try plain.rows(Self.query)))
        #expect(try snapshot.elements(in: 0..<snapshot.count).map(\.values) == rows, "the earlier snapshot reads as it did")
        #expect(Self.changes(secondEvents.withLock { $0 }) == [Changes(modifications: [0])], "one changeset for the later commit")
    }

    /// Stands for the observation center: it holds the commit queue while it
    /// "pins" a snapshot for a commit it heard of, as a pin that waits does.
    final class PinningSink: ExternalCommitSink, @unchecked Sendable {
        let noticed = DispatchSemaphore(value: 0), pinned = DispatchSemaphore(value: 0)
        private let heard = Mutex(0)
        func externalCommitNoticed() {
            guard heard.withLock({ count in count += 1; return count == 1 }) else { return }    // the first one waits
            noticed.signal()
            pinned.wait()
        }
        func fileReplaced(_ error: StoreError) {}
        func filesWritten() {}
    }

    /// Another connection's commit that was heard but is not pinned yet
    /// keeps this store's next commit from counting as the only one after
    /// the last snapshot. (Before, hearing a commit counted it as pinned: an
    /// own commit landing before that pin was applied alone, at a snapshot
    /// that also held the other commit, whose changes were then never
    /// applied; its deleted rows stayed in the live queries and reading them
    /// trapped.)
    @Test func aCommitHeardButNotPinnedMakesTheNextOwnCommitReadTheLog() throws {
        let database = TemporaryDatabase()
        let setup = try Connection(path: database.path, mode: .create)
        try setup.execute(script: "PRAGMA journal_mode = WAL; CREATE TABLE t (x)")
        let plain = PlainConnection(path: database.path)
        let commits = ExternalCommits(file: OpenedFile(path: database.path)) { try? Connection(path: database.path, mode: .readWrite) }
        let sink = PinningSink()
        commits.setWatching(true, sink: sink)
        defer { commits.setWatching(false, sink: sink) }
        commits.pinned(commits.counter.read())    // a snapshot at the newest commit
        try plain.execute("INSERT INTO t VALUES (1)")    // another connection's commit
        DispatchQueue.global().async { commits.checkNow() }
        sink.noticed.wait()    // heard; its snapshot is being pinned
        commits.ownCommitBegins()
        try plain.execute("INSERT INTO t VALUES (2)")    // stands for this store's commit
        #expect(commits.ownCommitNumber(wroteSomething: true) == nil, "the heard commit is not in any snapshot yet")
        commits.ownCommitEnded()
        sink.pinned.signal()
    }

    /// A commit of this store that writes no page (an UPDATE that sets a
    /// row's values to what they are: SQLite leaves the page alone) gets no
    /// commit number, so another connection's commit that lands before its
    /// snapshot is pinned is read from the log, not taken for this one.
    /// (Before, a no-op commit counted as the next commit: the other one,
    /// pinned in its place, was never applied; its deleted rows stayed in
    /// the live queries and reading them trapped.)
    @Test(arguments: CommitPathTests.captures)
    func anOwnCommitThatWritesNothingIsNotTakenForTheNextCommit(_ capture: ChangeCapture) throws {
        let (store, plain) = try Self.store(capture)
        let mirror = try Self.mirror(store, plain)
        // An empty WAL: the observation queue's upkeep has no pin to move
        // (moving one gives a connection back).
        var truncated = false
        for _ in 0..<200 where !truncated {
            truncated = try plain.rows("PRAGMA wal_checkpoint(TRUNCATE)").first?.first == .integer(0)
            if !truncated { usleep(10_000) }
        }
        #expect(truncated)
        // Every snapshot connection taken: the next pin waits for one.
        let pool = store.observationCenter.pool
        var taken: [Database] = []
        while let db = pool.connection(mayWait: false) { taken.append(db) }
        let last = try #require(taken.last)
        let unusedConnections = taken.dropLast()
        let done = DispatchSemaphore(value: 0)
        // Used by the thread below only, while this one waits in `write`.
        nonisolated(unsafe) let other = plain, connection = last
        Thread {
            // While the store's commit waits for its snapshot: another
            // connection's commit, then a connection for the snapshot.
            usleep(100_000)
            try? other.execute("DELETE FROM item WHERE id = 2")
            pool.withLock { pool.giveBack(connection) }
            done.signal()
        }.start()
        try store.write { tx in try tx.execute(sql: "UPDATE item SET rank = rank WHERE id = 1") }
        done.wait()
        pool.withLock { for db in unusedConnections { pool.giveBack(db) } }
        #expect(mirror.wait(until: try plain.rows(Self.query)), "the other connection's commit is applied")
    }

    @Test func theWatchRunsOnlyWhileSomethingIsObserved() throws {
        let (store, plain) = try Self.store()
        let commits = store.observationCenter.commits
        #expect(commits.watchingSource == nil)
        let first = try Self.mirror(store, plain)
        let second = try Self.mirror(store, plain)
        #expect(commits.watchingSource == "InotifyFileEvents")
        first.token?.invalidate()
        store.observationCenter.drain()
        #expect(commits.watchingSource == "InotifyFileEvents", "one observation is left")
        second.token?.invalidate()
        store.observationCenter.drain()
        #expect(commits.watchingSource == nil, "the last one ended: no watch")
        // Observing again watches again, and hears the next commit.
        let third = try Self.mirror(store, plain)
        #expect(commits.watchingSource == "InotifyFileEvents")
        try plain.execute("UPDATE item SET rank = 1000 WHERE id = 1")
        #expect(third.wait(until: try plain.rows(Self.query)))
    }
}
