import Foundation
import SluiceSyncClient
import SluiceSyncProtocol

/// A sync service's history in memory, behind the client's transport seam: what the client's
/// loop needs of a service to be tested without PostgreSQL — an append-only history with a
/// head, device ids owned by one token, a retried push's transactions skipped and another
/// store's under the same id refused, and a push on an old base sent back to pull first.
/// The real service may append such a push when it commutes with what came since; sending
/// it back is what it does otherwise, which the client must handle either way. Partial
/// sync, members and attachments are not here (the Server package tests them for real).
/// ``SyncConformance``'s scenarios hold for it and for the real service alike.
public final class HistoryService: ConformanceService, @unchecked Sendable {
    // @unchecked Sendable: every field is guarded by `lock`.
    private let lock = NSLock()
    private var transactions: [SyncTransaction] = []
    private var owners: [String: String] = [:]
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

    func push(_ request: PushRequest, token: String) -> SyncPushOutcome {
        lock.withLock {
            if let owner = owners[request.device], owner != token { return .identityConflict("device '\(request.device)' belongs to another token") }
            owners[request.device] = token
            let own = transactions.filter { $0.device == request.device }
            let lastLocal = own.map(\.local).max() ?? .min
            for transaction in request.transactions where transaction.local <= lastLocal {
                guard own.first(where: { $0.local == transaction.local })?.clock == transaction.clock else {
                    return .identityConflict("device '\(request.device)' already pushed another transaction as number \(transaction.local)")
                }
            }
            let fresh = request.transactions.filter { $0.local > lastLocal }
            let head = Int64(transactions.count)
            guard !fresh.isEmpty else { return .accepted(PushResponse(head: head, appended: 0)) }
            guard request.base == head else { return .behind }
            for transaction in fresh {
                var stored = transaction
                stored.seq = Int64(transactions.count + 1)
                transactions.append(stored)
            }
            return .accepted(PushResponse(head: Int64(transactions.count), appended: fresh.count))
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

        func push(_ push: PushRequest) async throws -> SyncPushOutcome { service.push(push, token: token) }
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
