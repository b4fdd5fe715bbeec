import HTTPTypes
import Hummingbird
import SluiceSyncProtocol

/// Authentication as middleware: before a route of the API runs, the request's bearer — a
/// token the service issued, or a JWT an app's backend signed (``JWTAuthentication``) —
/// becomes the context's ``SyncRequestContext/caller``: the space, member and role it
/// opens. A request without a live credential is answered here (401, 403 for a space a JWT
/// does not open, 429 past the rate limit, before any query: ``Gatekeeper``), and reaches
/// no route.
struct BearerAuthenticator: RouterMiddleware {
    typealias Context = SyncRequestContext
    let service: SyncService

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            var context = context
            context.caller = try await service.authenticate(request, context)
            return try await next(request, context)
        } catch let refusal as SyncService.Refusal {
            return refusal.response
        } catch {
            return service.answer(error, context)
        }
    }
}

extension SyncService {
    /// An answer given instead of running the request.
    struct Refusal: Error {
        var response: Response
        init(_ code: SyncErrorCode, _ message: String) { response = SyncService.error(code, message) }
    }

    /// Who is asking: the caller a live bearer names.
    ///
    /// - Throws: ``Refusal`` with the answer when there is none, `SyncErrorBody` for a JWT
    ///   that does not open the space, or what the lookup throws.
    func authenticate(_ request: Request, _ context: SyncRequestContext) async throws -> Caller {
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer "),
              case let token = String(header.dropFirst("Bearer ".count)), !token.isEmpty,
              token.utf8.count <= (configuration.jwt == nil ? 200 : 8_192) else {
            throw Refusal(.unauthorized, "a bearer token is required (Authorization: Bearer <token>)")
        }
        let address = context.remoteAddress?.ipAddress ?? ""
        if let jwt = configuration.jwt, JWTAuthentication.isJWT(token) {
            if case .limited = gate.admit(token: token, address: address) { throw rateLimited }
            return try await caller(request, jwt: jwt, bearer: token)
        }
        switch gate.admit(token: token, address: address) {
        case .limited: throw rateLimited
        case .unknown: throw Refusal(.unauthorized, "the token is unknown or revoked")
        case .lookUp: break
        }
        // Every PostgreSQL call, the token's lookup included, answers 503 by its deadline
        // (after a PostgreSQL restart a query on the client's pool has hung for longer than
        // a device waits for its answer).
        let found = try await Self.withDeadline(configuration.databaseDeadline, { [storage] in try await storage.access(forToken: token) })
        gate.looked(up: token, from: address, space: found?.space)
        guard let access = found else { throw Refusal(.unauthorized, "the token is unknown or revoked") }
        return Caller(access: access, token: token, schemaVersion: Self.schemaVersion(request))
    }

    private var rateLimited: Refusal {
        Refusal(.rateLimited, "too many requests (\(Int(configuration.requestsPerSecond)) per second per token); retry later")
    }
}
