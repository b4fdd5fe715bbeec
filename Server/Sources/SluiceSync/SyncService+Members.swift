import Foundation
import Hummingbird
import NIOCore
import SluiceSyncPolicy
import SluiceSyncProtocol

/// `POST /v1/members`: sharing a space.
extension SyncService {
    /// `POST /v1/members`: an owner shares the space with a user; a new token for the member.
    func share(_ buffer: ByteBuffer, caller: Caller) async throws -> Response {
        let share = try Self.decode(ShareRequest.self, buffer, as: "a share request")
        try caller.access.rights.checkShare(share, known: Set(configuration.schema.tables.map(\.name)))
        let token = try await storage.share(spaceID: caller.space, share)
        return try Self.json(ShareResponse(user: share.user, role: share.role, token: token))
    }
}
