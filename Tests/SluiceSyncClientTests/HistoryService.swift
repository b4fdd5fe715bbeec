import Foundation
@testable import SluiceSyncClient
import SluiceSyncProtocol

/// A sync service's history in memory, behind the client's transport seam: what the client's
/// loop needs of a service to be tested without PostgreSQL — an append-only history with a
/// head, device ids owned by one token, a retried push's transactions skipped and another
/// store's under the same id refused, and a push on an old base sent back to pull first.
/// The real service may append such a push when it commutes with what came since; sending
/// it back is what it does otherwise, which the client must handle either way. Partial
/// sync, members and attachments are not here (the Server package tests them for real).
///
/// Faults on demand: the next push can fail before it is stored, or after (its answer lost).
final class HistoryService: @unchecked Sendable {
    // @unchecked Sendable: every field is guarded by `lock`.
    private let lock = NSLock()
    private var transactions: [SyncTransaction] = []
    private var owners: [String: String] = [:]
    private var fault: Fault?
    private(set) var requests: [String] = []

    enum Fault {
        /// The push does not reach the service.
        case beforeStoring
        /// The service stores it and the answer is lost.
        case afterStoring
    }

    var head: Int64 { lock.withLock { Int64(transactions.count) } }

    /// Makes the next push fail as `fault` says.
    func failNextPush(_ fault: Fault) { lock.withLock { self.fault = fault } }

    /// The transport of a device holding `token`.
    func transport(token: String) -> some SyncTransport { Transport(service: self, token: token) }

    func push(_ request: PushRequest, token: String) throws -> SyncPushOutcome {
        try lock.withLock {
            requests.append("push \(request.device) base \(request.base) locals \(request.transactions.map(\.local))")
            if fault == .beforeStoring {
                fault = nil
                throw SyncClientError.offline("the push did not reach the service")
            }
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
            if fault == .afterStoring {
                fault = nil
                throw SyncClientError.offline("the service's answer was lost")
            }
            return .accepted(PushResponse(head: Int64(transactions.count), appended: fresh.count))
        }
    }

    func pull(since: Int64, limit: Int?) -> PullResponse {
        lock.withLock {
            requests.append("pull since \(since)")
            let after = transactions.dropFirst(Int(max(0, since))).prefix(limit ?? 1_000)
            return PullResponse(transactions: Array(after), head: Int64(transactions.count))
        }
    }

    private struct Transport: SyncTransport {
        let service: HistoryService
        let token: String

        func push(_ push: PushRequest) async throws -> SyncPushOutcome { try service.push(push, token: token) }
        func pull(since: Int64, limit: Int?, device: String?) async throws -> PullResponse { service.pull(since: since, limit: limit) }
        func wait(since: Int64, timeout: Int) async throws -> Int64 { service.head }
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
