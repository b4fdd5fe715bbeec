import Foundation
import Hummingbird
import NIOCore
import SluiceSyncProtocol

/// `POST /v1/members`: sharing a space.
extension SyncService {
    /// `POST /v1/members`: an owner shares the space with a user; a new token for the member.
    func share(_ buffer: ByteBuffer, caller: Caller) async throws -> Response {
        guard caller.access.role == .owner else {
            return Self.error(.forbidden, "only an owner of the space shares it; this token's role is \(caller.access.role.rawValue)")
        }
        let share = try Self.decode(ShareRequest.self, buffer, as: "a share request")
        guard ShareRequest.isValidUser(share.user) else {
            throw SyncErrorBody(.invalid, message: "user names have 1 to 64 letters, digits, '.', '_', '-' or '@'")
        }
        let known = Set(configuration.schema.tables.map(\.name))
        if let unknown = share.tables?.first(where: { !known.contains($0) }) {
            throw SyncErrorBody(.invalid, message: "no synced table '\(unknown)' (tables: \(known.sorted().joined(separator: ", ")))")
        }
        let token = try await storage.share(spaceID: caller.space, share)
        return try Self.json(ShareResponse(user: share.user, role: share.role, token: token))
    }
}
