/// The stable code of an error response (``SyncErrorBody/code``), with the HTTP status
/// the service answers it with: one table, so that the service and its clients agree.
/// Clients match codes, not statuses or messages.
///
/// ```swift
/// if body.code == .identityConflict { ... }
/// ```
public struct SyncErrorCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The code as it travels (`identity_conflict`).
    public let rawValue: String

    /// A code; one the table does not know answers 400.
    public init(rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    /// The request is not well formed, or names what does not exist: 400.
    public static let invalid = Self(rawValue: "invalid")
    /// A registered schema the service cannot use (its statement does not run): 400.
    public static let invalidSchema = Self(rawValue: "invalid_schema")
    /// No bearer, or one that is unknown, revoked, expired or of a removed member: 401.
    public static let unauthorized = Self(rawValue: "unauthorized")
    /// The caller may not do this (a viewer pushing, an editor outside its tables): 403.
    public static let forbidden = Self(rawValue: "forbidden")
    /// Nothing at this address (an attachment chunk the space does not hold): 404.
    public static let notFound = Self(rawValue: "not_found")
    /// An answer the service does not hold (`GET /v1/answers/<id>`: unknown, another
    /// caller's, fetched already, kept past its time, or held by another instance): send
    /// the request again (404).
    public static let answerUnknown = Self(rawValue: "answer_unknown")
    /// The push is based on an older head and writes what came since: pull first (409).
    public static let behind = Self(rawValue: "behind")
    /// The device id belongs to another token: 409.
    public static let identityConflict = Self(rawValue: "identity_conflict")
    /// Another device pushed this transaction already (same clock and changes): 409.
    public static let replay = Self(rawValue: "replay")
    /// A push names an attachment whose bytes the service does not hold yet: 409.
    public static let attachmentMissing = Self(rawValue: "attachment_missing")
    /// A part of a device's first upload that does not follow the last part the service
    /// took (it overtook the part before it): send it again after that one (409).
    public static let outOfOrder = Self(rawValue: "out_of_order")
    /// The history after the device's cursor was compacted away: start again (410).
    public static let compacted = Self(rawValue: "compacted")
    /// The body is over the size limit, or a push has too many transactions: 413.
    public static let tooLarge = Self(rawValue: "too_large")
    /// A push names an attachment with another size than the one held: 422.
    public static let attachmentMismatch = Self(rawValue: "attachment_mismatch")
    /// An attachment's bytes do not match their hash: 422.
    public static let hashMismatch = Self(rawValue: "hash_mismatch")
    /// Too many requests for this token or address: 429, with `Retry-After`.
    public static let rateLimited = Self(rawValue: "rate_limited")
    /// The instance is at its limit of requests or body bytes in flight: 503, with `Retry-After`.
    public static let saturated = Self(rawValue: "saturated")
    /// The service could not reach its database in time: 503, with `Retry-After`.
    public static let unavailable = Self(rawValue: "unavailable")

    /// The HTTP status the service answers this code with.
    public var status: Int {
        switch self {
        case .unauthorized: 401
        case .forbidden: 403
        case .notFound, .answerUnknown: 404
        case .behind, .identityConflict, .replay, .attachmentMissing, .outOfOrder: 409
        case .compacted: 410
        case .tooLarge: 413
        case .attachmentMismatch, .hashMismatch: 422
        case .rateLimited: 429
        case .saturated, .unavailable: 503
        default: 400
        }
    }

    /// Whether the client may send the same request again after a pause (`Retry-After`).
    public var isRetryable: Bool { status == 429 || status == 503 }
}
