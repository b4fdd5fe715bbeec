import Foundation
import Hummingbird
import NIOCore
import SluiceSyncProtocol

/// `POST /v1/rows`: the rows of a device's subscriptions (partial sync).
extension SyncService {
    /// The largest body of a rows request (its subscriptions).
    static let largestRowsRequest = 256 << 10

    func rows(_ request: Request, _ context: SyncRequestContext) async -> Response {
        await respond(context, bytes: Self.largestRowsRequest, read: {
            var request = request
            return try await request.collectBody(upTo: Self.largestRowsRequest)
        }, { caller, body in
            let rows = try Self.decode(RowsRequest.self, body, as: "a rows request")
            guard !rows.subscriptions.isEmpty else {
                throw SyncErrorBody(.invalid, message: "a rows request names at least one subscription")
            }
            guard rows.since >= 0 else { throw SyncErrorBody(.invalid, message: "since is 0 or more") }
            // A page's position names a part of the round: a subscription, then a table its rows point at.
            if let after = rows.after, after.subscription < 0 || after.subscription >= rows.subscriptions.count + configuration.schema.tables.count {
                throw SyncErrorBody(.invalid, message: "after.subscription \(after.subscription) names no part of this round")
            }
            let checked = try rows.subscriptions.map { try SubsetEvaluator.check($0, schema: configuration.schema) }
            var seen: Set<String> = []
            for subscription in checked where !seen.insert(subscription.table.name.lowercased()).inserted {
                throw SyncErrorBody(.invalid, message: "two subscriptions to \(subscription.table.name): join their filters with OR")
            }
            if let device = rows.device {
                guard Self.isValidDevice(device) else {
                    throw SyncErrorBody(.invalid, message: "device ids have 1 to 64 letters, digits, '.', '_' or '-'")
                }
                try await storage.saw(device: device, at: rows.since, space: caller.space, token: caller.token)
            }
            let limit = min(max(rows.limit ?? Self.rowsPageSize, 1), Self.rowsPageSize)
            var page = try await storage.rows(space: caller.space, request: rows, subscriptions: checked, schema: configuration.schema, limit: limit)
            if let changes = downgrading(page.changes, for: caller.schemaVersion) { page.changes = changes }
            let response = try Self.json(page)
            SyncMetrics.pulled(bytes: response.body.contentLength ?? 0)
            return response
        })
    }

    /// Rows per page of a rows request (their parents come on top).
    static let rowsPageSize = 2_000
}
