import Foundation
import Hummingbird
import NIOCore
import SluiceSyncPolicy
import SluiceSyncProtocol
import SluiceSyncStore

/// `POST /v1/rows`: the rows of a device's subscriptions (partial sync).
extension SyncService {
    /// The largest body of a rows request (its subscriptions).
    static let largestRowsRequest = 256 << 10

    func rows(_ request: Request, _ context: SyncRequestContext) async -> Response {
        await respond(context, bytes: Self.largestRowsRequest, read: {
            try await Self.body(of: request, upTo: Self.largestRowsRequest, as: "a rows request")
        }, { caller, body in
            let rows = try Self.decode(RowsRequest.self, body, as: "a rows request")
            let checked = try SubsetPages.checked(rows, schema: configuration.schema)
            if let device = rows.device {
                try PushRequestChecks.checkDevice(device)
                try await storage.saw(device: device, at: rows.since, space: caller.space, token: caller.token)
            }
            let limit = min(max(rows.limit ?? SubsetPages.pageSize, 1), SubsetPages.pageSize)
            let body: Data
            if versioned.isOlder(caller.schemaVersion) {
                // An older app version sees the rows in its own names: each is read and rewritten.
                var page = try await storage.rows(space: caller.space, request: rows, subscriptions: checked, schema: configuration.schema, limit: limit)
                if let changes = versioned.downgraded(page.changes, for: caller.schemaVersion) { page.changes = changes }
                body = try SyncJSON.encode(page)
            } else {
                // The rows as stored, not decoded and encoded again.
                body = try await storage.encodedRows(space: caller.space, request: rows, subscriptions: checked, schema: configuration.schema, limit: limit)
            }
            let response = Self.json(body)
            SyncMetrics.pulled(bytes: response.body.contentLength ?? 0)
            return response
        })
    }
}
