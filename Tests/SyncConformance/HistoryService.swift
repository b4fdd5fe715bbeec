import Foundation
import SluiceSyncClient
import SluiceSyncPolicy
import SluiceSyncProtocol

/// A sync service's history in memory, behind the client's transport seam, for the client's
/// tests without PostgreSQL. Pushes are decided by the service's own rules
/// (``PushDecision``: identity, retries, replays, commuting pushes, pruning) over an
/// in-memory ``PushStorage``; what the real service's append adds (CHECK constraints, the
/// clock clamp, the parents' ON DELETE actions, the folded rows) and partial sync, members
/// and attachments are not here (the Server package tests them for real).
/// ``SyncConformance``'s scenarios hold for it and for the real service alike.
public final class HistoryService: ConformanceService, @unchecked Sendable {
    // @unchecked Sendable: every field is guarded by `lock`.
    fileprivate let lock = NSLock()
    fileprivate var transactions: [SyncTransaction] = []
    fileprivate var owners: [String: String] = [:]
    private var tokens = 0

    /// An empty history.
    public init() {}

    public func head() -> Int64 { lock.withLock { Int64(transactions.count) } }

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

        func append(_ fresh: [SyncTransaction], device: String, after head: Int64) -> Result<PushResponse, SyncErrorBody> {
            service.lock.withLock {
                for transaction in fresh {
                    var stored = transaction
                    stored.seq = Int64(service.transactions.count + 1)
                    service.transactions.append(stored)
                }
                let clamped = fresh.filter { $0.sent != nil }.count
                return .success(PushResponse(head: Int64(service.transactions.count), appended: fresh.count, clamped: clamped == 0 ? nil : clamped))
            }
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

        func rows(_ rows: RowsRequest) async throws -> RowsResponse { throw Self.notHere("partial sync") }
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
