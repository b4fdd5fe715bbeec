import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SluiceSyncPolicy
import SluiceSyncProtocol

/// `GET /v1/pull?since=N&limit=M&device=D`: the history after `since`. With `wait=S`, a
/// long poll: the page comes once the history passes `since` with a transaction of a device
/// other than `D` (or, empty, after S seconds), and says so (`Sluice-Waited`): a following
/// device learns of a commit and gets it in one round trip instead of `/v1/wait`'s and a pull's.
extension SyncService {
    /// The header of a pull that waited (an older service answers at once, without it).
    static let waitedHeader = HTTPField.Name("Sluice-Waited")!

    func pull(_ request: Request, _ context: SyncRequestContext) async -> Response {
        let waiting = request.uri.queryParameters.get("wait").flatMap { Int64($0) }
        return await respond(context, longPoll: waiting != nil, { caller in
            let since = try Self.integer(request, "since") ?? 0
            let device = request.uri.queryParameters.get("device")
            if let device { try PushRequestChecks.checkDevice(device) }
            if let waiting {
                _ = try await waitForHead(after: since, seconds: min(max(waiting, 0), Int64(Self.longestWait)), caller: caller, ignoring: device)
            }
            let limit = min(max(try Self.integer(request, "limit") ?? Int64(configuration.pullLimit), 1), Int64(configuration.pullLimit))
            // The device's position, for compaction (older clients send none: they hold
            // nothing back), recorded on another connection while the page is read: its
            // commit is not on the way to the answer.
            async let saw: Void = { [storage] in
                if let device { try await storage.saw(device: device, at: since, space: caller.space, token: caller.token) }
            }()
            // The position is recorded whatever the page's read throws (`compacted`), as when
            // it was recorded first.
            let stored: Result<Data, any Error>
            do { stored = .success(try await storage.pull(space: caller.space, since: since, limit: Int(limit), maximumBytes: configuration.pullBytes)) } catch { stored = .failure(error) }
            try await saw
            let body = try downgrading(pull: try stored.get(), for: caller.schemaVersion)
            SyncMetrics.pulled(bytes: body.count)
            var headers: HTTPFields = [.contentType: "application/json"]
            if waiting != nil { headers[Self.waitedHeader] = "1" }
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
        })
    }
}
