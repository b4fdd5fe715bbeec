import Foundation
import SluiceSyncProtocol

/// Why a sync step failed.
public enum SyncClientError: Error, Sendable, CustomStringConvertible {
    /// The service could not be reached (or did not answer in time): retried later, nothing lost.
    case offline(String)
    /// 401: the token is missing, unknown or revoked.
    case unauthorized(String)
    /// The service refused the request (a change that does not fit the schema, a body
    /// too large, too many requests...), with its error code and message.
    case rejected(status: Int, SyncErrorBody)
    /// An answer that is not what the protocol says.
    case protocolViolation(String)

    public var description: String {
        switch self {
        case .offline(let reason): "offline: \(reason)"
        case .unauthorized(let message): "unauthorized: \(message)"
        case .rejected(let status, let body): "refused (\(status)): \(body.error): \(body.message)"
        case .protocolViolation(let message): "protocol violation: \(message)"
        }
    }
}

/// What the client asks of the sync service, one call per endpoint: HTTP in an app
/// (``HTTPSyncTransport``, what ``SyncClient/init(store:server:token:configuration:)``
/// uses), or your own — another networking stack, a proxy that adds headers, a service in
/// memory for tests, a wrapper that injects faults. Each call is safe to repeat; a failure
/// to reach the service is `SyncClientError.offline`, a refusal `.rejected` (or
/// `.unauthorized`).
public protocol SyncTransport: Sendable {
    /// `POST /v1/push`.
    func push(_ push: PushRequest) async throws -> SyncPushOutcome
    /// `GET /v1/pull`: a page of the history after `since` (at most `limit` transactions;
    /// `device` names the caller, for compaction's positions).
    func pull(since: Int64, limit: Int?, device: String?) async throws -> PullResponse
    /// `POST /v1/rows`: one page of a round of a subset's rows.
    func rows(_ rows: RowsRequest) async throws -> RowsResponse
    /// `POST /v1/members`: shares the space with a user (an owner's call); the member's token.
    func share(_ share: ShareRequest) async throws -> ShareResponse
    /// `GET /v1/wait`: waits until the head passes `since` (or `timeout` seconds); the head.
    func wait(since: Int64, timeout: Int) async throws -> Int64
    /// `GET /v1/pull?wait=`: waits until the history passes `since` (or `timeout` seconds),
    /// then answers the page after it: how a following device hears of a commit and gets it
    /// in one round trip. Nil when the service cannot (an older one, or a transport without
    /// it: the default): the device waits with ``wait(since:timeout:)`` and pulls.
    func pull(since: Int64, device: String?, waiting timeout: Int) async throws -> PullResponse?
    /// What the service holds of an attachment (nil: nothing).
    func attachmentStatus(_ attachment: SyncAttachment) async throws -> AttachmentStatus?
    /// Uploads chunk `index`; what the service holds then.
    func upload(_ attachment: SyncAttachment, chunk index: Int, _ bytes: Data) async throws -> AttachmentStatus
    /// Downloads chunk `index` of a complete attachment.
    func download(_ attachment: SyncAttachment, chunk index: Int) async throws -> Data
    /// Uses `token` (a refreshed JWT, a new token) from the next request on, in every copy.
    func updateBearer(_ token: String)
}

/// How the service took a push.
public enum SyncPushOutcome: Sendable {
    case accepted(PushResponse)
    /// It writes what came since its base: the device pulls, then pushes again.
    case behind
    /// The device id belongs to another token, or another store pushed under it.
    case identityConflict(String)
}

extension SyncTransport {
    /// None: the device waits with ``wait(since:timeout:)`` and pulls.
    public func pull(since: Int64, device: String?, waiting timeout: Int) async throws -> PullResponse? { nil }

    /// A page of the history after `since`, at most what the service sends at once.
    public func pull(since: Int64, device: String? = nil) async throws -> PullResponse {
        try await pull(since: since, limit: nil, device: device)
    }
}
