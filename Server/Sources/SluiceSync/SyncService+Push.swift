import Foundation
import Hummingbird
import NIOCore
import SluiceSyncProtocol

/// `POST /v1/push`.
extension SyncService {
    func push(_ buffer: ByteBuffer, caller: Caller) async throws -> Response {
        var push = try Self.decode(PushRequest.self, buffer, as: "a push")
        guard Self.isValidDevice(push.device) else {
            throw SyncErrorBody(error: "invalid", message: "device ids have 1 to 64 letters, digits, '.', '_' or '-'")
        }
        guard push.transactions.count <= configuration.maximumPushTransactions else {
            // 413, as a body over the size limit: the device splits its push and sends again.
            return Self.error(.contentTooLarge, "too_large", "more than \(configuration.maximumPushTransactions) transactions in one push")
        }
        var previous: Int64 = .min
        for (index, transaction) in push.transactions.enumerated() {
            guard transaction.local > previous else {
                throw SyncErrorBody(error: "invalid", message: "transaction \(index) (local \(transaction.local)): a push's local numbers increase")
            }
            previous = transaction.local
            for (position, change) in transaction.changes.enumerated() {
                do {
                    push.transactions[index].changes[position] = try normalized(change, version: caller.schemaVersion)
                } catch {
                    throw SyncErrorBody(error: error.error, message: "transaction \(index) (local \(transaction.local)): \(error.message)")
                }
            }
        }
        if let refusal = caller.access.refusal(of: push) {
            return Self.error(.forbidden, "forbidden", refusal)
        }
        if let missing = try await missingAttachment(in: push, space: caller.space) {
            return Self.error(.conflict, "attachment_missing", missing)
        }
        switch try await storage.push(push, space: caller.space, token: caller.token, policy: policy) {
        case .success(let response):
            SyncMetrics.pushed(transactions: push.transactions.count, changes: push.transactions.reduce(0) { $0 + $1.changes.count })
            return try Self.json(response)
        case .failure(let error) where ["behind", "identity_conflict", "replay"].contains(error.error): return Self.error(.conflict, error.error, error.message)
        case .failure(let error): return Self.error(.badRequest, error.error, error.message)
        }
    }

    /// The first attachment `push` names whose bytes the service does not hold complete,
    /// described (nil: every one is here).
    func missingAttachment(in push: PushRequest, space: Int64) async throws -> String? {
        var named: [String: String] = [:]
        for (index, transaction) in push.transactions.enumerated() {
            for change in transaction.changes {
                for (column, value) in change.values ?? [:] {
                    guard case .attachment(let attachment) = value, named[attachment.hash] == nil else { continue }
                    named[attachment.hash] = "transaction \(index) (local \(transaction.local)): \(change.table).\(column) of \(change.id): attachment "
                        + "\(attachment.hash) is not uploaded (PUT its chunks to /v1/attachments/<hash>/<index> first); nothing was applied"
                }
            }
        }
        guard !named.isEmpty else { return nil }
        let complete = try await storage.completeAttachments(space: space, among: Array(named.keys))
        return named.filter { !complete.contains($0.key) }.sorted { $0.key < $1.key }.first?.value
    }
}
