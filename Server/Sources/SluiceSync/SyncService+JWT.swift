import HTTPTypes
import Hummingbird
import SluiceSyncProtocol

/// Requests whose bearer is a JWT (``JWTAuthentication``): checked without PostgreSQL, then
/// run as the member and role its claims name in the space the request names.
extension SyncService {
    /// The request header that names the space a JWT's request is for (a JWT may open several).
    // (A valid field name: the initializer never returns nil for it.)
    static let spaceHeader = HTTPField.Name("Sluice-Space")!

    /// The caller a JWT names: checked without PostgreSQL (signature, algorithm, expiry),
    /// then the space the request names, which its claims must open to a member not removed.
    func caller(_ request: Request, jwt: JWTAuthentication, bearer: String) async throws -> Caller {
        let claims = try await jwt.verify(bearer)
        let member = claims.sub.value
        guard let name = request.headers[Self.spaceHeader] ?? (claims.spaces.count == 1 ? claims.spaces.keys.first : nil) else {
            throw SyncErrorBody(.invalid, message: "the JWT of '\(member)' opens \(claims.spaces.count) spaces: name one in the Sluice-Space header")
        }
        guard !name.isEmpty, name.utf8.count <= 100 else { throw SyncErrorBody(.invalid, message: "space names have 1 to 100 bytes") }
        guard let role = claims.spaces[name] else {
            throw SyncErrorBody(.forbidden, message: "the JWT of '\(member)' does not open space '\(name)'")
        }
        let found = try await Self.withDeadline(configuration.databaseDeadline) { [storage] in try await storage.spaceID(named: name, member: member) }
        guard let space = found else {
            throw SyncErrorBody(.unauthorized, message: "member '\(member)' was removed from space '\(name)': its JWTs open it no more")
        }
        let access = SyncStorage.Access(space: space, member: member, role: role, tables: role == .editor ? claims.tables?[name].map(Set.init) : nil)
        // The member owns the devices it pushes under, whichever of its JWTs it sends.
        return Caller(access: access, token: Self.jwtCaller + member, schemaVersion: Self.schemaVersion(request))
    }
}
