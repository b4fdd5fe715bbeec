import Foundation
import Sluice
import SluiceDemo
import SluiceSyncClient
import SluiceSyncPolicy
import SluiceSyncProtocol
import SluiceSyncStore

/// A sync service's history in memory, behind the client's transport seam, for the client's
/// tests without PostgreSQL. It decides by the service's own rules:
///
/// - pushes checked against the schema and its versions (``PushRequestChecks``,
///   ``VersionedSchema``) and the service's limits (``PushLimits``), then decided
///   (``PushDecision``: identity, retries, replays, commuting pushes, pruning, the clock
///   clamp) over an in-memory ``PushStorage``;
/// - rows checked against the CHECK constraints (``RowChecker``), folded into current rows
///   (``RowFold``), the parents' ON DELETE actions taken (``DeleteActions``);
/// - partial sync and snapshots paged as the service pages its rows (``SubsetPages``);
/// - attachments' bytes kept and checked (``AttachmentChecks``);
/// - the history compacted (``HistoryPruning``);
/// - members and their roles (``MemberAccess``).
///
/// Removing members, JWTs and spaces are not here (the Server package tests them for real).
/// ``SyncConformance``'s scenarios hold for it and for the real service alike.
public final class HistoryService: ConformanceService, @unchecked Sendable {
    // @unchecked Sendable: every field is guarded by `lock`, but the rules (set once).
    let lock = NSLock()
    var transactions: [SyncTransaction] = []
    /// The sequence of the last transaction appended.
    var headSeq: Int64 = 0
    /// How far the history is pruned (``HistoryPruning``), and where each device's rows are.
    var pruned: Int64 = 0
    var positions: [String: HistoryPruning.Position] = [:]
    fileprivate var owners: [String: String] = [:]
    /// The current rows, by lowercased table and id: the history folded.
    var rows: [String: CurrentRow] = [:]
    /// Attachments' bytes by hash (``HistoryService/StoredAttachment``).
    var attachments: [String: StoredAttachment] = [:]
    /// The largest attachment taken, as the real service's `--max-attachment-bytes`.
    public let largestAttachment: Int64
    /// Most transactions in one push (`--max-push-transactions`).
    var maximumPushTransactions = 10_000
    /// Largest push body, as the HTTP transport encodes it (`--max-body-bytes`).
    var maximumBodyBytes = 64 << 20
    /// What each token opens the space as (``HistoryService+Members``).
    var accesses: [String: MemberAccess] = [:]
    /// The newest schema: how changes are stored.
    let schema: SyncSchema
    /// The schema versions devices speak (one, unless made with versions).
    let versioned: VersionedSchema
    let checker: RowChecker?
    let deleteRules: [SyncSchema.DeleteRule]

    /// A row as the history folds to it: its values, whether deleted, the transaction that
    /// last wrote it and each column's clock.
    struct CurrentRow {
        var values: [String: SyncValue]
        var deleted = false
        var seq: Int64
        var clocks: [String: Int64]
    }

    /// An empty history of `schema`'s tables (the demo's, as `sluice-sync serve --demo`).
    public convenience init(schema: SyncSchema? = nil, largestAttachment: Int64 = 1 << 30) throws {
        let schema = try schema ?? Store.inMemory(migrations: DemoSchema.migrations).read { db in
            try SyncSchema(db, tables: DemoSchema.syncedTables)
        }
        try self.init(versioned: VersionedSchema(schema), largestAttachment: largestAttachment)
    }

    /// An empty history set up as a conformance scenario says.
    public convenience init(_ setup: SyncConformance.Setup) throws {
        switch setup {
        case .demo: try self.init()
        case .photos: try self.init(schema: try SyncConformance.Photos.schema())
        case .versions: try self.init(versions: try SyncConformance.Versions.versions())
        case .withoutStatements: try self.init(schema: try SyncConformance.schemaWithoutStatements())
        case .limits(let transactions, let bytes):
            try self.init()
            (maximumPushTransactions, maximumBodyBytes) = (transactions, bytes)
        }
    }

    /// An empty history shared by devices of several app versions (as `sluice-sync serve
    /// --schema` with a file of versions).
    public convenience init(versions: SyncSchemaVersions) throws {
        try self.init(versioned: VersionedSchema(versions))
    }

    private init(versioned: VersionedSchema, largestAttachment: Int64 = 1 << 30) throws {
        let schema = versioned.newest
        self.versioned = versioned
        self.schema = schema
        checker = try RowChecker(schema)
        deleteRules = schema.deleteRules
        self.largestAttachment = largestAttachment
    }

    public func head() -> Int64 { lock.withLock { headSeq } }

    public func content() -> [String] {
        lock.withLock {
            SyncContent.of(serviceRows: rows.compactMap { key, row -> (String, String, [String: SyncValue])? in
                let parts = key.split(separator: "\u{0}", maxSplits: 1).map(String.init)
                return parts.count == 2 && !row.deleted ? (parts[0], parts[1], row.values) : nil
            })
        }
    }

    /// A new token of the space's owner (as `sluice-sync token add`).
    public func newToken() -> String { mint(MemberAccess(member: nil, role: .owner)) }

    /// The transport of a device holding `token` that speaks `schemaVersion`.
    public func transport(token: String, schemaVersion: Int?) -> any SyncTransport {
        Transport(service: self, token: token, schemaVersion: schemaVersion)
    }

    /// One push at a time: a push's decision and append are one transaction of the history.
    let gate = PushGate()

    func push(_ request: PushRequest, token: String, version: Int?) async throws -> SyncPushOutcome {
        let access = try access(token)
        let checked: PushRequest
        let bytes = try JSONEncoder().encode(request).count
        do throws(SyncErrorBody) {
            if bytes > maximumBodyBytes { throw PushLimits.bodyTooLarge(maximum: maximumBodyBytes) }
            try PushLimits.check(request, maximumTransactions: maximumPushTransactions)
            checked = try PushRequestChecks.checked(request) { change throws(SyncErrorBody) in try versioned.accepted(change, from: version) }
        } catch {
            throw Self.rejection(error)
        }
        if let refusal = access.refusal(of: checked) {
            throw Self.rejection(SyncErrorBody(.forbidden, message: refusal))
        }
        if let refusal = await AttachmentChecks.problem(in: checked, held: { completeAttachments(among: $0) }) {
            throw Self.rejection(refusal)
        }
        await gate.enter()
        let result: Result<PushResponse, SyncErrorBody>
        do {
            result = try await PushDecision.push(checked, token: token, storage: Storage(service: self, keptColumns: versioned.keptColumns(for: version)))
        } catch {
            await gate.leave()
            throw error
        }
        await gate.leave()
        switch result {
        case .success(let response): return .accepted(response)
        case .failure(let body) where body.code == .behind: return .behind
        case .failure(let body) where body.code == .identityConflict: return .identityConflict(body.message)
        case .failure(let body): throw Self.rejection(body)
        }
    }

    /// The history as ``PushDecision`` reads and appends it (inside the push gate).
    private struct Storage: PushStorage {
        let service: HistoryService
        /// The columns the pushing device's version does not know (its inserts keep them).
        let keptColumns: [String: Set<String>]

        func claim(device: String, token: String, clocks: [Int64]) -> PushFacts? {
            service.lock.withLock {
                if let owner = service.owners[device], owner != token { return nil }
                service.owners[device] = token
                return PushFacts(lastLocal: service.transactions.filter { $0.device == device }.map(\.local).max(), head: service.headSeq,
                                 othersShareAClock: service.transactions.contains { $0.device != device && clocks.contains($0.clock.rawValue) })
            }
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

        func footprints(after base: Int64, limit: Int64, notBy device: String) -> [ChangeFootprint] {
            service.lock.withLock {
                ChangeFootprint.of(service.transactions.filter { ($0.seq ?? 0) > base && $0.device != device }.prefix(Int(limit)).map { ($0.seq ?? 0, $0.changes) })
            }
        }

        func headAndPruned(forAppend: Bool) -> (head: Int64, pruned: Int64) {
            service.lock.withLock { (service.headSeq, service.pruned) }
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
                stored.changes = try await PushRows.keepingUnknownColumns(transaction.changes, keep: keptColumns, rows: rows)
                service.lock.withLock {
                    service.transactions.append(stored)
                    service.headSeq = seq
                }
                rows.fold(RowFold.net(stored.changes), seq: seq, clock: transaction.clock.rawValue)
            }
            let cursor = seq
            let clock = HybridClock(date: Date())
            let effects = starts.isEmpty ? [] : try await DeleteActions.take(from: starts, rules: service.deleteRules, seq: seq + 1, clock: clock.rawValue, rows: rows)
            if !effects.isEmpty {
                seq += 1
                let own = SyncTransaction(seq: seq, device: DeleteActions.serviceDevice, local: seq, clock: clock, changes: effects)
                service.lock.withLock {
                    service.transactions.append(own)
                    service.headSeq = seq
                }
            }
            let clamped = fresh.filter { $0.sent != nil }.count
            return .success(PushResponse(head: cursor, appended: fresh.count, clamped: clamped == 0 ? nil : clamped, followedBy: seq > cursor ? seq : nil,
                                         keepsUploadOrder: true))
        }
    }

    func pull(since: Int64, limit: Int?, device: String?, version: Int?) throws -> PullResponse {
        let pruned = lock.withLock {
            if let device { saw(device, at: since) }
            return self.pruned
        }
        try Self.refusing { () throws(SyncErrorBody) in try HistoryPruning.checkPull(since: since, pruned: pruned) }
        return lock.withLock {
            let after = transactions.filter { ($0.seq ?? 0) > since }.prefix(limit ?? 1_000).map { transaction in
                var seen = transaction
                seen.changes = versioned.downgraded(transaction.changes, for: version) ?? transaction.changes
                return seen
            }
            return PullResponse(transactions: after, head: headSeq)
        }
    }

    private struct Transport: SyncTransport {
        let service: HistoryService
        let token: String
        let schemaVersion: Int?

        func push(_ push: PushRequest) async throws -> SyncPushOutcome { try await service.push(push, token: token, version: schemaVersion) }
        func pull(since: Int64, limit: Int?, device: String?) async throws -> PullResponse {
            _ = try service.access(token)
            return try service.pull(since: since, limit: limit, device: device, version: schemaVersion)
        }
        func wait(since: Int64, timeout: Int) async throws -> Int64 {
            _ = try service.access(token)
            return service.head()
        }
        func updateBearer(_ token: String) {}

        func rows(_ rows: RowsRequest) async throws -> RowsResponse {
            _ = try service.access(token)
            return try await service.rows(rows, version: schemaVersion)
        }
        func share(_ share: ShareRequest) async throws -> ShareResponse { try service.share(share, token: token) }
        func attachmentStatus(_ attachment: SyncAttachment) async throws -> AttachmentStatus? {
            _ = try service.access(token)
            return try service.attachmentStatus(attachment.hash)
        }
        func upload(_ attachment: SyncAttachment, chunk index: Int, _ bytes: Data) async throws -> AttachmentStatus {
            try service.putChunk(hash: attachment.hash, size: attachment.size, index: String(index), bytes, token: token)
        }
        func download(_ attachment: SyncAttachment, chunk index: Int) async throws -> Data {
            _ = try service.access(token)
            return try service.chunk(attachment, index: index)
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
