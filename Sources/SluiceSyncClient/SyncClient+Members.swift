import SluiceSyncProtocol

/// Sharing the space, and the bearer a client sends.
extension SyncClient {
    /// Replaces the bearer this client sends (a JWT the app's backend refreshed before it
    /// expires, or a new token): from the next request on, a running `follow()` included.
    /// The device keeps its id; a member owns its devices across its JWTs.
    ///
    /// - Parameter token: the new token or JWT.
    public func updateToken(_ token: String) {
        transport.updateBearer(token)
    }

    /// Shares this client's space with a user (this client's token must be an owner's):
    /// one call, answered with a token for the member's devices.
    ///
    /// ```swift
    /// let token = try await client.share(with: "bob@example.com", as: .viewer)
    /// ```
    ///
    /// - Parameters:
    ///   - user: the user's name in the space (1 to 64 letters, digits, `.`, `_`, `-`, `@`).
    ///   - role: what the member may do; a viewer's pushes are refused (403 `forbidden`).
    ///   - tables: for an editor, the only tables it may write; nil for all.
    /// - Returns: a bearer token that opens the space as the member.
    /// - Throws: `SyncClientError.rejected` (403 `forbidden` when this token is not an
    ///   owner's, 400 `invalid` for a bad name or table), or `.offline`.
    public func share(with user: String, as role: SyncRole, tables: [String]? = nil) async throws -> String {
        try await transport.share(ShareRequest(user: user, role: role, tables: tables)).token
    }
}
