import Foundation
import Sluice
import SluiceDemo
import SluiceSyncClient
import SluiceSyncPolicy
import SluiceSyncProtocol
import SluiceSyncStore

/// A sync service's history in memory, behind the client's transport seam, for the client's
/// tests without PostgreSQL. Pushes are decided by the service's own rules
/// (``PushDecision``: identity, retries, replays, commuting pushes, pruning, the clock
/// clamp) over an in-memory ``PushStorage``, and appended as the service appends them: rows
/// checked against the schema's CHECK constraints (``RowChecker``), folded into current rows
/// (``RowFold``), the parents' ON DELETE actions taken (``DeleteActions``); partial sync and
/// snapshots page its rows as the service pages its own (``SubsetPages``). Members, schema
/// versions, compaction and attachments are not here (the Server package tests them for
/// real). ``SyncConformance``'s scenarios hold for it and for the real service alike.
public final class HistoryService: ConformanceService, @unchecked Sendable {
    // @unchecked Sendable: every field is guarded by `lock`, but the rules (set once).
    fileprivate let lock = NSLock()
    fileprivate var transactions: [SyncTransaction] = []
    fileprivate var owners: [String: String] = [:]
    /// The current rows, by lowercased table and id: the history folded.
    fileprivate var rows: [String: CurrentRow] = [:]
    private var tokens = 0
    fileprivate let schema: SyncSchema
    fileprivate let checker: RowChecker?
    fileprivate let deleteRules: [SyncSchema.DeleteRule]

    /// A row as the history folds to it: its values, whether deleted, the transaction that
    /// last wrote it and each column's clock.
    fileprivate struct CurrentRow {
        var values: [String: SyncValue]
        var deleted = false
        var seq: Int64
        var clocks: [String: Int64]
    }

    /// An empty history of `schema`'s tables (the demo's, as `sluice-sync serve --demo`).
    public init(schema: SyncSchema? = nil) throws {
        let schema = try schema ?? Store.inMemory(migrations: DemoSchema.migrations).read { db in
            try SyncSchema(db, tables: DemoSchema.syncedTables)
        }
        self.schema = schema
        checker = try RowChecker(schema)
        deleteRules = schema.deleteRules
    }

    public func head() -> Int64 { lock.withLock { Int64(transactions.count) } }

    public func content() -> [String] {
        lock.withLock {
            SyncContent.of(serviceRows: rows.compactMap { key, row -> (String, String, [String: SyncValue])? in
                let parts = key.split(separator: "\u{0}", maxSplits: 1).map(String.init)
                return parts.count == 2 && !row.deleted ? (parts[0], parts[1], row.values) : nil
            })
        }
    }

    public func newToken() -> String {
        lock.withLock {
            tokens += 1
            return "token-\(tokens)"
        }
    }

    /// The transport of a device holding `token`.
    public func transport(token: String) -> any SyncTransport { Transport(service: self, token: token) }

    /// One push at a time: a push's decision and append are one transaction of the history.
    private let gate = PushGate()

    func push(_ request: PushRequest, token: String) async throws -> SyncPushOutcome {
        await gate.enter()
        let result: Result<PushResponse, SyncErrorBody>
        do {
            result = try await PushDecision.push(request, token: token, storage: Storage(service: self))
        } catch {
            await gate.leave()
            throw error
        }
        await gate.leave()
        switch result {
        case .success(let response): return .accepted(response)
        case .failure(let body) where body.code == .behind: return .behind
        case .failure(let body) where body.code == .identityConflict: return .identityConflict(body.message)
        case .failure(let body): throw SyncClientError.rejected(status: body.code.status, body)
        }
    }

    /// The history as ``PushDecision`` reads and appends it (inside the push gate).
    private struct Storage: PushStorage {
        let service: HistoryService

        func claim(device: String, token: String) -> Bool {
            service.lock.withLock {
                if let owner = service.owners[device] { return owner == token }
                service.owners[device] = token
                return true
            }
        }

        func lastLocal(device: String) -> Int64? {
            service.lock.withLock { service.transactions.filter { $0.device == device }.map(\.local).max() }
        }

        func sentClocks(device: String, locals: [Int64]) -> [Int64: Int64] {
            service.lock.withLock {
                Dictionary(service.transactions.filter { $0.device == device && locals.contains($0.local) }.map { ($0.local, $0.clock.rawValue) },
                           uniquingKeysWith: { first, _ in first })
            }
        }

        func transactions(withClocks clocks: [Int64], notBy device: String) -> [StoredTransaction] {
            service.lock.withLock {
                service.transactions.filter { $0.device != device && clocks.contains($0.clock.rawValue) }.map {
                    StoredTransaction(device: $0.device, local: $0.local, clock: $0.clock.rawValue, changes: $0.changes)
                }
            }
        }

        func footprints(after base: Int64, limit: Int64) -> [ChangeFootprint] {
            service.lock.withLock {
                ChangeFootprint.of(service.transactions.dropFirst(Int(max(0, base))).prefix(Int(limit)).map { ($0.seq ?? 0, $0.changes) })
            }
        }

        func headAndPruned(forAppend: Bool) -> (head: Int64, pruned: Int64) {
            service.lock.withLock { (Int64(service.transactions.count), 0) }
        }

        func append(_ fresh: [SyncTransaction], device: String, after head: Int64) async throws -> Result<PushResponse, SyncErrorBody> {
            let rows = Rows(service: service)
            if let checker = service.checker {
                do { try checker.check(try await PushRows.candidates(fresh, checks: checker.checks, rows: rows)) } catch let error as SyncErrorBody { return .failure(error) }
            }
            let starts = DeleteActions.starts(fresh, rules: service.deleteRules)
            var seq = head
            for transaction in fresh {
                seq += 1
                var stored = transaction
                stored.seq = seq
                service.lock.withLock { service.transactions.append(stored) }
                rows.fold(RowFold.net(transaction.changes), seq: seq, clock: transaction.clock.rawValue)
            }
            let cursor = seq
            let clock = HybridClock(date: Date())
            let effects = starts.isEmpty ? [] : try await DeleteActions.take(from: starts, rules: service.deleteRules, seq: seq + 1, clock: clock.rawValue, rows: rows)
            if !effects.isEmpty {
                seq += 1
                let own = SyncTransaction(seq: seq, device: DeleteActions.serviceDevice, local: seq, clock: clock, changes: effects)
                service.lock.withLock { service.transactions.append(own) }
            }
            let clamped = fresh.filter { $0.sent != nil }.count
            return .success(PushResponse(head: cursor, appended: fresh.count, clamped: clamped == 0 ? nil : clamped, followedBy: seq > cursor ? seq : nil))
        }
    }

    /// The current rows as the service's rules read and fold them (inside the push gate).
    private struct Rows: CurrentRows {
        let service: HistoryService

        private func live(_ table: String, _ id: String) -> [String: SyncValue]? {
            guard let row = service.rows[table + "\u{0}" + id], !row.deleted else { return nil }
            return row.values
        }

        static func reference(_ values: [String: SyncValue], _ column: String) -> String? {
            let value = values.first { $0.key.lowercased() == column.lowercased() }?.value
            if case .reference(let id)? = value { return id }
            return nil
        }

        func liveValues(_ table: String, ids: [String]) -> [String: [String: SyncValue]] {
            service.lock.withLock {
                Dictionary(ids.compactMap { id in live(table, id).map { (id, $0) } }, uniquingKeysWith: { first, _ in first })
            }
        }

        func liveRows(_ table: String, whose column: String, referencesOneOf parents: [String]) -> [String] {
            let parents = Set(parents)
            return service.lock.withLock {
                service.rows.compactMap { key, row in
                    let parts = key.split(separator: "\u{0}", maxSplits: 1).map(String.init)
                    guard parts.count == 2, parts[0] == table, !row.deleted, let parent = Self.reference(row.values, column), parents.contains(parent) else { return nil }
                    return parts[1]
                }
            }
        }

        func liveRows(_ table: String, among ids: [String], whose column: String, referencesNoLiveRowOf parent: String) -> [String] {
            service.lock.withLock {
                ids.filter { id in
                    guard let values = live(table, id), let reference = Self.reference(values, column) else { return false }
                    return live(parent, reference) == nil
                }
            }
        }

        func fold(_ changes: [RowFold.Change], seq: Int64, clock: Int64) {
            service.lock.withLock {
                for change in changes {
                    let key = change.table + "\u{0}" + change.id
                    let clocks = Dictionary(change.values.keys.map { ($0, clock) }, uniquingKeysWith: { first, _ in first })
                    switch change.op {
                    case .insert: service.rows[key] = CurrentRow(values: change.values, seq: seq, clocks: clocks)
                    case .update:
                        guard var row = service.rows[key], !row.deleted else { continue }
                        row.values.merge(change.values) { $1 }
                        row.clocks.merge(clocks) { $1 }
                        row.seq = seq
                        service.rows[key] = row
                    case .delete:
                        service.rows[key]?.deleted = true
                        service.rows[key]?.seq = seq
                    case .leave: continue
                    }
                }
            }
        }
    }

    /// The current rows as a page of partial sync reads them (one page under the lock, so
    /// in one state).
    private struct Subset: SubsetSource {
        let service: HistoryService

        func head() -> Int64 { service.lock.withLock { Int64(service.transactions.count) } }

        private func stored(_ table: String, _ id: String, _ row: CurrentRow) -> StoredRow {
            StoredRow(table: table, id: id, values: row.values, deleted: row.deleted, clocks: row.clocks)
        }

        private func rows(of table: String) -> [(id: String, row: CurrentRow)] {
            service.rows.compactMap { key, row in
                let parts = key.split(separator: "\u{0}", maxSplits: 1).map(String.init)
                return parts.count == 2 && parts[0] == table ? (parts[1], row) : nil
            }.sorted { $0.id < $1.id }
        }

        func changedRows(_ table: String, since: Int64, after: String, limit: Int, paths: [(column: String, parent: String)]) -> [StoredRow] {
            service.lock.withLock { changed(table, since: since, after: after, limit: limit, paths: paths) }
        }

        private func changed(_ table: String, since: Int64, after: String, limit: Int, paths: [(column: String, parent: String)]) -> [StoredRow] {
            let changed = rows(of: table).filter { id, row in
                guard id > after else { return false }
                if since == 0 { return !row.deleted }
                if row.seq > since { return true }
                return !row.deleted && paths.contains { path in
                    guard let parent = Rows.reference(row.values, path.column), let stored = service.rows[path.parent + "\u{0}" + parent] else { return false }
                    return stored.seq > since
                }
            }
            return changed.prefix(max(limit, 1)).map { stored(table, $0.id, $0.row) }
        }

        func storedRows(_ table: String, ids: [String]) -> [StoredRow] {
            service.lock.withLock { ids.sorted().compactMap { id in service.rows[table + "\u{0}" + id].map { stored(table, id, $0) } } }
        }

        func liveRows(_ table: String, whose column: String, referencesOneOf ids: [String]) -> [StoredRow] {
            let ids = Set(ids)
            return service.lock.withLock {
                rows(of: table).filter { !$0.row.deleted && Rows.reference($0.row.values, column).map(ids.contains) == true }
                    .map { stored(table, $0.id, $0.row) }
            }
        }
    }

    func rows(_ request: RowsRequest) async throws -> RowsResponse {
        let subscriptions: [SubsetEvaluator.Checked]
        do { subscriptions = try SubsetPages.checked(request, schema: schema) } catch let error as SyncErrorBody {
            throw SyncClientError.rejected(status: error.code.status, error)
        }
        let limit = min(max(request.limit ?? SubsetPages.pageSize, 1), SubsetPages.pageSize)
        // One page in one state of the rows: no push appends meanwhile.
        await gate.enter()
        do {
            let page = try await SubsetPages.page(request, subscriptions: subscriptions, schema: schema, limit: limit, rows: Subset(service: self))
            await gate.leave()
            return page
        } catch {
            await gate.leave()
            throw error
        }
    }

    func pull(since: Int64, limit: Int?) -> PullResponse {
        lock.withLock {
            let after = transactions.dropFirst(Int(max(0, since))).prefix(limit ?? 1_000)
            return PullResponse(transactions: Array(after), head: Int64(transactions.count))
        }
    }

    private struct Transport: SyncTransport {
        let service: HistoryService
        let token: String

        func push(_ push: PushRequest) async throws -> SyncPushOutcome { try await service.push(push, token: token) }
        func pull(since: Int64, limit: Int?, device: String?) async throws -> PullResponse { service.pull(since: since, limit: limit) }
        func wait(since: Int64, timeout: Int) async throws -> Int64 { service.head() }
        func updateBearer(_ token: String) {}

        func rows(_ rows: RowsRequest) async throws -> RowsResponse { try await service.rows(rows) }
        func share(_ share: ShareRequest) async throws -> ShareResponse { throw Self.notHere("members") }
        func attachmentStatus(_ attachment: SyncAttachment) async throws -> AttachmentStatus? { throw Self.notHere("attachments") }
        func upload(_ attachment: SyncAttachment, chunk index: Int, _ bytes: Data) async throws -> AttachmentStatus { throw Self.notHere("attachments") }
        func download(_ attachment: SyncAttachment, chunk index: Int) async throws -> Data { throw Self.notHere("attachments") }

        static func notHere(_ feature: String) -> SyncClientError {
            .rejected(status: 404, SyncErrorBody(.notFound, message: "the in-memory history service has no \(feature)"))
        }
    }
}

/// Lets one task in at a time, the others waiting their turn (in order).
actor PushGate {
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func enter() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func leave() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }
}
