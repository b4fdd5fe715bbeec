import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice
import SluiceDemo

/// Crash safety, many processes at once, resource hygiene and failing I/O.
@Suite(.timeLimit(.minutes(10)), .serialized) struct ReliabilityTests {
    static let environment = ProcessInfo.processInfo.environment

    /// A writer process; its standard output is collected as it comes.
    final class Writer: @unchecked Sendable {
        // @unchecked Sendable: `output` is guarded by `lock`.
        let process = Process()
        private let lock = NSLock()
        private var output = Data()
        private let pipe = Pipe()

        init(_ arguments: [String]) throws {
            process.executableURL = CommandRunner.executable(named: "sluice-stress")
            process.arguments = arguments
            let pipe = self.pipe
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
                let data = handle.availableData
                guard let self, !data.isEmpty else { return }
                self.lock.withLock { self.output.append(data) }
            }
            try process.run()
        }

        var lines: [String] { lock.withLock { String(decoding: output, as: UTF8.self) }.split(separator: "\n").map(String.init) }

        /// Waits for the process to exit, then takes what it wrote that the
        /// readability handler had not read yet (the exit can be seen first).
        func waitUntilExit() {
            process.waitUntilExit()
            pipe.fileHandleForReading.readabilityHandler = nil
            let rest = pipe.fileHandleForReading.readDataToEndOfFile()
            lock.withLock { output.append(rest) }
        }

        func kill() {
            Foundation.kill(process.processIdentifier, SIGKILL)
            waitUntilExit()
        }
    }

    /// Kills a writer with SIGKILL at random points of its bulk writes, again
    /// and again: every reported commit is there, no transaction is torn, the
    /// file is intact, and live queries restart with a correct result.
    @Test func killedWriterNeverLosesOrTearsATransaction() throws {
        let kills = Int(Self.environment["SLUICE_CRASH_KILLS"] ?? "") ?? 50
        let database = TemporaryDatabase()
        _ = try database.store(migrations: DemoSchema.migrations)
        var reported = Set<Int64>()
        var random = SplitMix64(seed: 5)
        var replayed: [String: [Int64: [String: SQLiteValue]]] = [:]
        var replayedThrough: HistoryToken?
        for round in 0..<kills {
            let writer = try Writer(["batches", database.path])
            // Let it get going: in three rounds of four, until its first commit
            // (start-up time varies a lot between builds: ThreadSanitizer's is
            // several times slower), then a random while; in the others, kill
            // it at a random point of its start-up.
            if random.next() % 4 != 0 {
                for _ in 0..<400 where !writer.lines.contains(where: { $0.hasPrefix("committed ") }) { usleep(1_000) }
            }
            usleep(UInt32(2_000 + random.next() % 60_000))
            writer.kill()
            for line in writer.lines where line.hasPrefix("committed ") {
                if let batch = Int64(line.dropFirst(10)) { reported.insert(batch) }
            }

            let store = try Store(path: database.path)
            let check = try store.read { db in try db.fetchRows(sql: "PRAGMA integrity_check") }
            #expect(check.map { $0[0] } == [.text("ok")], "round \(round)")
            let ledger = try store.read { db in
                try db.fetchRows(sql: "SELECT conversation_id, text FROM message WHERE sender = 'ledger'")
            }.reduce(into: [Int64: Int]()) { $0[Int64(sqliteValue: $1[0]) ?? -1] = Int(sqliteValue: $1[1]).flatMap { $0 } ?? Int(String(sqliteValue: $1[1]) ?? "") ?? -1 }
            let counts = try store.read { db in
                try db.fetchRows(sql: "SELECT first_name, COUNT(*) FROM person GROUP BY first_name")
            }.reduce(into: [Int64: Int]()) { counts, row in
                if let name = String(sqliteValue: row[0]), let batch = Int64(name.dropFirst(6)) { counts[batch] = Int(sqliteValue: row[1]) }
            }
            #expect(reported.isSubset(of: Set(ledger.keys)), "a reported commit is missing after round \(round)")
            #expect(Set(counts.keys) == Set(ledger.keys), "rows without their ledger entry: a torn transaction (round \(round))")
            for (batch, size) in ledger { #expect(counts[batch] == size, "batch \(batch) is torn") }
            // The change log and the data agree exactly: replaying every
            // logged change from the empty database gives the tables' rows.
            try Self.replay(store, into: &replayed, after: &replayedThrough)
            for table in ["person", "message"] {
                let rows = try store.read { db in try db.fetchRows(sql: "SELECT rowid, * FROM \(table)") }
                let actual = Dictionary(uniqueKeysWithValues: rows.map { row in
                    (Int64(sqliteValue: row[0]) ?? -1, Dictionary(uniqueKeysWithValues: zip(row.columns.dropFirst(), row.values.dropFirst())))
                })
                #expect(replayed[table] ?? [:] == actual, "\(table): the log and the data differ after round \(round)")
            }

            // Live queries start again from a correct state.
            let results = try store.objects(Person.self).filter("age < 10").sorted(by: [Ordering("first_name"), Ordering("last_name")])
            let recorder = ChangeRecorder(results)
            store.waitForObservers()
            let initial = recorder.take()
            #expect(initial.first?.results.map(Array.init) == (try results.fetch()))
        }
        #expect(reported.count > kills / 2, "the writer committed in most rounds (\(reported.count) commits reported)")
    }

    /// Applies the logged changes after `token` (all of them when nil) to
    /// `state` (rowid → column → value per table), and moves `token` on.
    static func replay(_ store: Store, into state: inout [String: [Int64: [String: SQLiteValue]]], after token: inout HistoryToken?) throws {
        let transactions = try store.changes(since: try token ?? store.earliestToken)
        token = transactions.last?.token ?? token
        for transaction in transactions {
            for change in transaction.changes {
                switch change.operation {
                case .insert:
                    state[change.table, default: [:]][change.rowID] = Dictionary(uniqueKeysWithValues: zip(change.new?.columns ?? [], change.new?.values ?? []))
                case .update:
                    var row = state[change.table]?[change.oldRowID ?? change.rowID] ?? [:]
                    state[change.table]?[change.oldRowID ?? change.rowID] = nil
                    for (column, value) in zip(change.new?.columns ?? [], change.new?.values ?? []) { row[column] = value }
                    state[change.table, default: [:]][change.rowID] = row
                case .delete:
                    state[change.table]?[change.rowID] = nil
                }
            }
        }
    }

    /// Two writer processes, one writer in this process and eight live
    /// queries: no SQLITE_BUSY reaches a caller, no changeset is lost or
    /// duplicated, memory stays flat.
    @Test func manyProcessesWritingWhileLiveQueriesFollow() throws {
        let seconds = Double(Self.environment["SLUICE_STRESS_SECONDS"] ?? "") ?? 6
        let database = TemporaryDatabase()
        let store = try database.store(migrations: DemoSchema.migrations)
        let all = store.objects(Person.self)
        let mirrors = [
            Mirror("by first name", all.sorted(byKeyPath: "first_name")),
            Mirror("adults by age", try all.filter("age >= 18").sorted(by: [Ordering("age", descending: true)])),
            Mirror("oslo", try all.filter("city ==[c] 'oslo'").sorted(by: [Ordering("last_name"), Ordering("first_name")])),
            Mirror("no age", try all.filter("age IS NULL").sorted(byKeyPath: "first_name", ascending: false)),
            Mirror("z or young", try all.filter("first_name BEGINSWITH[c] 'z' OR age < 10").sorted(byKeyPath: "city")),
            Mirror("not ana", try all.filter("NOT first_name ==[c] 'ana'").sorted(by: [Ordering("last_name", descending: true), Ordering("age")])),
            Mirror("range", try all.filter("age BETWEEN 20 AND 40").sorted(byKeyPath: "age")),
            Mirror("youngest ten", all.sorted(byKeyPath: "age").limit(10)),
        ]
        let writers = try (0..<2).map { _ in try Writer(["churn", database.path, String(seconds)]) }
        var workload = Workload(seed: 77)
        let start = Date()
        var memory: [(bytes: Int, rows: Int)] = []
        var commits = 0
        while Date().timeIntervalSince(start) < seconds {
            let ids = try store.read { db in try db.fetchRows(sql: "SELECT id FROM person ORDER BY random() LIMIT 20").compactMap { Int64(sqliteValue: $0[0]) } }
            let statements = workload.transaction(ids: ids)
            try store.write { tx in for statement in statements { try tx.execute(sql: statement.sql, arguments: statement.arguments) } }
            commits += 1
            if commits % 50 == 0 {
                for mirror in mirrors { mirror.catchUp() }
                let rows = try store.read { db in try db.fetchCount(Person.self) }
                Self.returnFreeMemory()
                memory.append((Self.residentMemory(), rows))
            }
        }
        for writer in writers {
            writer.waitUntilExit()
            #expect(writer.process.terminationStatus == 0, "\(writer.lines)")
            #expect(writer.lines.last?.hasPrefix("ok ") == true, "the other process hit: \(writer.lines.last ?? "nothing")")
        }
        store.waitForObservers()
        for mirror in mirrors {
            mirror.catchUp()
            #expect(mirror.array == (try mirror.results.fetch()), "\(mirror.name)")
        }
        // Memory follows the data the eight queries hold, not the number of
        // commits: from the second quarter of the run to the last, growth
        // stays within 16 KB per added row (8 results × element, tree entry,
        // row state) plus 16 MB. The suites running beside this one allocate
        // too: each quarter counts by its smallest sample (what was still
        // held when the others' transient allocations were not).
        if memory.count >= 8 {
            let quarter = memory.count / 4
            func smallest(_ samples: ArraySlice<(bytes: Int, rows: Int)>) -> (bytes: Int, rows: Int) {
                samples.min { $0.bytes < $1.bytes } ?? (0, 0)
            }
            let early = smallest(memory[quarter..<(2 * quarter)]), late = smallest(memory[(memory.count - quarter)...])
            let allowance = 16 * 1024 * max(0, late.rows - early.rows) + 16_000_000
            #expect(late.bytes - early.bytes < allowance,
                    "resident memory \(early.bytes) → \(late.bytes) bytes while rows went \(early.rows) → \(late.rows) over \(commits) commits")
        }
    }

    /// Opening and closing a store a thousand times keeps file descriptors
    /// and memory flat. (A connection not closed keeps its descriptors; so
    /// does one closed with a statement not finalized: `sqlite3_close_v2`
    /// leaves it a zombie, files open, until the statement goes.)
    @Test func openingAndClosingAThousandTimesLeaksNothing() throws {
        let database = TemporaryDatabase()
        _ = try database.store(migrations: DemoSchema.migrations)
        func cycle() throws {
            let store = try Store(path: database.path)
            try store.write { tx in try tx.insert(Person(firstName: "A", lastName: "B")) }
            _ = try store.read { db in try db.fetchAll(Person.self, limit: 5) }
            let token = store.objects(Person.self).observe { _ in }
            store.waitForObservers()
            token.invalidate()
            store.waitForObservers()
        }
        for _ in 0..<50 { try cycle() }
        // Counted on this test's database alone: tests of other suites run at the same time
        // and open and close their own (a ThreadSanitizer run of CI saw process-wide counts
        // move by 6 descriptors).
        let path = database.path
        do {
            // The count sees this database's files while a store is open. (Not one set per
            // connection: SQLite keeps the descriptor of a connection closed while another
            // held a lock on the file, and hands it to the next connection that opens it, so
            // a reader opened then may add none; this check once failed on that.)
            let open = try Store(path: path)
            _ = try open.read { db in try db.fetchCount(Person.self) }
            #expect(Self.openDescriptors(under: path) > 0, "the count sees the open store's files")
        }
        let descriptors = Self.openDescriptors(under: path)
        let memory = Self.residentMemory()
        for _ in 0..<1_000 { try cycle() }
        // Queues finish releasing what the last store held.
        usleep(100_000)
        #expect(Self.openDescriptors(under: path) <= descriptors, "file descriptors: every connection closed, every statement finalized")
        #expect(Double(Self.residentMemory()) < Double(memory) * 1.3 + 8_000_000, "resident memory")
    }

    /// A full disk (here: SQLite's page limit) gives a clear error, keeps
    /// nothing of the failed transaction, and the store works once there is room.
    @Test func fullDatabaseFailsCleanlyAndRecovers() throws {
        let store = try TemporaryDatabase().store(migrations: DemoSchema.migrations)
        try store.write { tx in try tx.insert(Person(firstName: "Kept", lastName: "Row")) }
        let before = try dump(store)
        let pages = try store.read { db in try db.fetchRows(sql: "PRAGMA page_count") }.first.flatMap { Int64(sqliteValue: $0[0]) } ?? 0
        try store.write { tx in try tx.execute(sql: "PRAGMA max_page_count = \(pages + 2)") }
        let error = try #require(throws: StoreError.self) {
            try store.write { tx in
                for index in 0..<5_000 { try tx.insert(Person(firstName: "Filler \(index)", lastName: String(repeating: "x", count: 200))) }
            }
        }
        #expect(error.code == .full)
        #expect(error.message.contains("full"))
        #expect(try dump(store) == before, "no partial state")
        try store.write { tx in try tx.execute(sql: "PRAGMA max_page_count = 1073741823") }
        try store.write { tx in try tx.insert(Person(firstName: "After", lastName: "Room")) }
        #expect(try store.read { db in try db.fetchCount(Person.self) } == 2)
    }

    /// A file locked by another process: a clear `.busy` after the busy
    /// timeout, nothing half-written, and the store works once the lock is gone.
    @Test func lockedFileFailsCleanlyAndRecovers() throws {
        let database = TemporaryDatabase()
        _ = try database.store(migrations: DemoSchema.migrations)
        var configuration = Store.Configuration()
        configuration.busyTimeoutMilliseconds = 200
        let store = try Store(path: database.path, configuration: configuration)
        let before = try dump(store)
        // The sqlite3 shell takes the write lock and holds it for a second.
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        shell.arguments = [database.path]
        let input = Pipe()
        shell.standardInput = input
        shell.standardOutput = FileHandle.nullDevice
        try shell.run()
        input.fileHandleForWriting.write(Data("BEGIN IMMEDIATE; INSERT INTO person (first_name, last_name) VALUES ('Shell', 'Lock');\n".utf8))
        usleep(300_000)
        let error = try #require(throws: StoreError.self) {
            try store.write { tx in try tx.insert(Person(firstName: "Blocked", lastName: "Write")) }
        }
        #expect(error.code == .busy)
        #expect(error.message.contains("locked"))
        input.fileHandleForWriting.write(Data("ROLLBACK;\n".utf8))
        try input.fileHandleForWriting.close()
        shell.waitUntilExit()
        #expect(try dump(store) == before)
        try store.write { tx in try tx.insert(Person(firstName: "After", lastName: "Unlock")) }
        #expect(try store.read { db in try db.fetchCount(Person.self) } == 1)
    }

    /// A read-only file (for a process that is not root): a clear error,
    /// nothing written, and the store works once the file is writable again.
    @Test(.enabled(if: getuid() == 0, "drops from root to nobody to make permissions apply"))
    func readOnlyFileFailsCleanlyAndRecovers() throws {
        let database = TemporaryDatabase()
        do {
            let store = try database.store(migrations: DemoSchema.migrations)
            try store.write { tx in try tx.insert(Person(firstName: "Kept", lastName: "Row")) }
        }   // closed: the WAL is checkpointed into the file
        let before = try dump(path: database.path)
        func insertAsNobody() throws -> (status: Int32, output: String) {
            let process = Process()
            process.executableURL = CommandRunner.executable(named: "sluice-stress")
            process.arguments = ["insert", database.path]
            var environment = ProcessInfo.processInfo.environment
            environment["SLUICE_STRESS_AS_NOBODY"] = "1"
            process.environment = environment
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            try process.run()
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return (process.terminationStatus, output.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        // The folder and file belong to root and are not writable by others.
        chmod(database.directory.path, 0o755)
        chmod(database.path, 0o644)
        let refused = try insertAsNobody()
        #expect(refused.status == 1, "\(refused.output)")
        #expect(refused.output.hasPrefix("error "), "\(refused.output)")
        #expect(refused.output.contains("readonly") || refused.output.contains("read-only") || refused.output.contains("unable to open"),
                "a clear error: \(refused.output)")
        #expect(try dump(path: database.path) == before, "nothing was written")
        // The cause goes away: now it works.
        chmod(database.directory.path, 0o777)
        chmod(database.path, 0o666)
        let accepted = try insertAsNobody()
        #expect(accepted.status == 0 && accepted.output == "ok", "\(accepted.output)")
        let people = { (lines: [String]) in lines.filter { $0.hasPrefix("person ") } }
        #expect(try people(dump(path: database.path)).count == people(before).count + 1)
    }

    /// Gives the allocator's free memory back to the system (glibc's
    /// `malloc_trim`, looked up at run time: Swift's Glibc module leaves
    /// malloc.h out), so that resident memory shows what is in use rather
    /// than what the allocator's per-thread arenas keep after other suites'
    /// bursts (a CI run saw 28 MB of that growth with no rows added).
    static func returnFreeMemory() {
        #if canImport(Glibc)
        typealias Trim = @convention(c) (Int) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: Trim.self)(0)
        #endif
    }

    static func residentMemory() -> Int {
        #if canImport(Glibc)
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
              let pages = text.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
        #else
        return 0
        #endif
    }

    /// Open descriptors of files whose path starts with `prefix` (the database, its WAL and
    /// shared-memory files).
    static func openDescriptors(under prefix: String) -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { entry in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(entry)"))?.hasPrefix(prefix) ?? false
        }.count
    }
}
