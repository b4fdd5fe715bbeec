import Foundation
import Hummingbird
import NIOCore
import SluiceSyncPolicy
import SluiceSyncProtocol

/// `POST /v1/push`.
extension SyncService {
    func push(_ buffer: ByteBuffer, caller: Caller) async throws -> Response {
        let request = try Self.decode(PushRequest.self, buffer, as: "a push")
        guard request.transactions.count <= configuration.maximumPushTransactions else {
            // 413, as a body over the size limit: the device splits its push and sends again.
            return Self.error(.tooLarge, "more than \(configuration.maximumPushTransactions) transactions in one push")
        }
        let push = try PushRequestChecks.checked(request) { change throws(SyncErrorBody) in try normalized(change, version: caller.schemaVersion) }
        if let refusal = caller.access.refusal(of: push) {
            return Self.error(.forbidden, refusal)
        }
        switch try await checkAttachments(in: push, space: caller.space) {
        case .missing(let message): return Self.error(.attachmentMissing, message)
        case .mismatch(let message): return Self.error(.attachmentMismatch, message)
        case nil: break
        }
        var policy = self.policy
        // A device of an older version leaves the columns it does not know as they are.
        policy.keptColumns = caller.schemaVersion.flatMap { configuration.schemaVersions?.unknownColumns(to: $0) } ?? [:]
        switch try await storage.push(push, space: caller.space, token: caller.token, policy: policy) {
        case .success(let response):
            SyncMetrics.pushed(transactions: push.transactions.count, changes: push.transactions.reduce(0) { $0 + $1.changes.count })
            return try Self.json(response)
        case .failure(let error): return Self.error(error.code, error.message)
        }
    }

    /// What is wrong with the attachments a push names.
    enum AttachmentProblem: Equatable {
        /// The service does not hold its bytes complete (the device uploads them first).
        case missing(String)
        /// The service holds bytes with this hash, of another size: no device could fill it.
        case mismatch(String)
    }

    /// The first attachment `push` names that the service does not hold complete with the
    /// size it names (nil: every one is here, as named).
    func checkAttachments(in push: PushRequest, space: Int64) async throws -> AttachmentProblem? {
        var named: [SyncAttachment: String] = [:]
        for (index, transaction) in push.transactions.enumerated() {
            for change in transaction.changes {
                for (column, value) in change.values ?? [:] {
                    guard case .attachment(let attachment) = value, named[attachment] == nil else { continue }
                    named[attachment] = "transaction \(index) (local \(transaction.local)): \(change.table).\(column) of \(change.id): attachment \(attachment.hash)"
                }
            }
        }
        guard !named.isEmpty else { return nil }
        let held = try await storage.completeAttachments(space: space, among: Array(Set(named.keys.map(\.hash))))
        for (attachment, place) in named.sorted(by: { $0.value < $1.value }) {
            guard let size = held[attachment.hash] else {
                return .missing(place + " is not uploaded (PUT its chunks to /v1/attachments/<hash>/<index> first); nothing was applied")
            }
            if size != attachment.size {
                return .mismatch(place + " names \(attachment.size) bytes, and the service holds it with \(size); nothing was applied")
            }
        }
        return nil
    }
}
