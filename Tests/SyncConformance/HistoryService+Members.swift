import Foundation
import SluiceSyncClient
import SluiceSyncPolicy
import SluiceSyncProtocol

/// Members in memory: each token opens the space as a member with a role, and the service's
/// rules (``MemberAccess``) decide what it may push, upload and share.
extension HistoryService {
    /// A new token opening the space as `access`.
    func mint(_ access: MemberAccess) -> String {
        lock.withLock {
            let token = "token-\(accesses.count + 1)"
            accesses[token] = access
            return token
        }
    }

    /// What `token` opens the space as; a token the service did not make opens nothing
    /// (401, as the real service answers it).
    func access(_ token: String) throws -> MemberAccess {
        guard let access = lock.withLock({ accesses[token] }) else { throw SyncClientError.unauthorized("the token is unknown") }
        return access
    }

    func share(_ share: ShareRequest, token: String) throws -> ShareResponse {
        let access = try access(token)
        try Self.refusing { () throws(SyncErrorBody) in try access.checkShare(share, known: Set(schema.tables.map(\.name))) }
        let member = MemberAccess(member: share.user, role: share.role, tables: share.tables.map(Set.init))
        return ShareResponse(user: share.user, role: share.role, token: mint(member))
    }
}
