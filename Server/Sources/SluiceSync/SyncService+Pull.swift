import Foundation
import Hummingbird
import NIOCore
import SluiceSyncPolicy
import SluiceSyncProtocol

/// `GET /v1/pull?since=N&limit=M&device=D`: the history after `since`.
extension SyncService {
    func pull(_ request: Request, _ context: SyncRequestContext) async -> Response {
        await respond(context, read: {}, { caller, _ in
            let since = try Self.integer(request, "since") ?? 0
            let limit = min(max(try Self.integer(request, "limit") ?? Int64(configuration.pullLimit), 1), Int64(configuration.pullLimit))
            // The device's position, for compaction (older clients send none: they hold nothing back).
            if let device = request.uri.queryParameters.get("device") {
                try PushRequestChecks.checkDevice(device)
                try await storage.saw(device: device, at: since, space: caller.space, token: caller.token)
            }
            try HistoryPruning.checkPull(since: since, pruned: try await storage.pruned(space: caller.space))
            let stored = try await storage.pull(space: caller.space, since: since, limit: Int(limit), maximumBytes: configuration.pullBytes)
            let body = try downgrading(pull: stored, for: caller.schemaVersion)
            SyncMetrics.pulled(bytes: body.count)
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
        })
    }
}
