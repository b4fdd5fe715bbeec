import Foundation
import Hummingbird
import NIOCore
import SluiceSyncPolicy
import SluiceSyncProtocol

/// `POST /v1/push`.
extension SyncService {
    func push(_ buffer: ByteBuffer, caller: Caller) async throws -> Response {
        // A push's rows are read by SyncJSON: ten times JSONDecoder's speed.
        let request = try Self.decode(PushRequest.self, buffer, as: "a push") { raw in try SyncJSON.decode(PushRequest.self, from: raw) }
        try PushLimits.check(request, maximumTransactions: configuration.maximumPushTransactions)
        let push = try PushRequestChecks.checked(request) { change throws(SyncErrorBody) in try versioned.accepted(change, from: caller.schemaVersion) }
        if let refusal = caller.access.rights.refusal(of: push) {
            return Self.error(.forbidden, refusal)
        }
        if let refusal = try await AttachmentChecks.problem(in: push, held: { try await storage.completeAttachments(space: caller.space, among: $0) }) {
            return Self.error(refusal.code, refusal.message)
        }
        var policy = self.policy
        // A device of an older version leaves the columns it does not know as they are.
        policy.keptColumns = versioned.keptColumns(for: caller.schemaVersion)
        switch try await storage.push(push, space: caller.space, token: caller.token, policy: policy) {
        case .success(let response):
            SyncMetrics.pushed(transactions: push.transactions.count, changes: push.transactions.reduce(0) { $0 + $1.changes.count })
            return try Self.json(response)
        case .failure(let error): return Self.error(error.code, error.message)
        }
    }
}
