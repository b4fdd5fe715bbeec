import Foundation
import Hummingbird
import Logging
import NIOCore
import Prometheus
import SluiceSyncPolicy
import SluiceSyncStore
@_spi(SluiceInternal) import SluiceSyncProtocol

/// The sync service's HTTP API over ``SyncStorage``. It keeps nothing between requests
/// (but the per-instance limits and a two-second memory of unknown tokens, see
/// ``Gatekeeper``), so
/// several instances can serve one PostgreSQL.
///
/// - `POST /v1/push` (JSON ``PushRequest``) → ``PushResponse``; a push based on an older
///   head is put after the transactions it did not see when it writes nothing they wrote,
///   else refused with 409 `behind` (pull, rebase, push again); 409
///   `identity_conflict` when the device id belongs to another token or the push does not
///   continue the id's history (a copied store: the device takes a new id).
/// - `GET /v1/pull?since=N[&limit=M]` → ``PullResponse``.
/// - `GET /v1/wait?since=N[&timeout=S]` → `{"head":H}` as soon as the head passes `N`, or
///   after `S` seconds (at most 30): the live channel, as a long poll.
/// - `POST /v1/members` (JSON ``ShareRequest``, an owner's token) → ``ShareResponse``: shares
///   the space with a user as `owner`, `editor` (of every table or some) or `viewer`, with a
///   new token for the member. A viewer's push, or an editor's that writes a table it may
///   not, is refused with 403 `forbidden` and nothing of it applied.
/// - `GET /v1/health` → `ok` when PostgreSQL answers, else 503 (`unavailable`), without a
///   token: liveness as a load balancer checks it.
/// - `GET /v1/ready` → `ready` when PostgreSQL answers, the service's tables are there and
///   the instance is below its limits, else 503 saying which is not: readiness.
/// - `GET /metrics` → the Prometheus text format of ``SyncMetrics`` (with
///   ``Configuration/metrics`` set), without a token.
///
/// Every request is timed, counted and logged with its id (``RequestRecorder``), which
/// comes back as `X-Request-Id`; a refused request says its error code in `Sluice-Error`.
///
/// Every other request needs `Authorization: Bearer <token>`: 401 without a live one.
/// Pushed changes are checked against the registered ``SyncSchema`` (types, NOT NULL,
/// references, and the CHECK constraints of the tables' statements) and stored with its
/// names; identifiers from a request never reach SQL (tables and columns travel as data,
/// in JSON).
public struct SyncService: Sendable {
    /// Limits and the registered schema.
    public struct Configuration: Sendable {
        /// The tables and columns a space may hold.
        public var schema: SyncSchema
        /// Largest accepted request body.
        public var maximumBodyBytes: Int = 64 << 20
        /// Largest attachment a space takes (its bytes go in chunks, whatever the body limit).
        public var largestAttachment: Int64 = 1 << 30
        /// Requests per second per token (on average), and how many at once.
        public var requestsPerSecond: Double = 200
        /// The bucket size of the rate limit.
        public var burst: Double = 400
        /// Most transactions in one pull page.
        public var pullLimit: Int = 1_000
        /// A pull page stops growing past this many bytes (but has at least one transaction).
        public var pullBytes: Int = 8 << 20
        /// Most transactions in one push (more are refused with 413, as a body over
        /// ``maximumBodyBytes`` is: a device then pushes fewer at a time).
        public var maximumPushTransactions: Int = 10_000
        /// How long a request may wait on PostgreSQL before it is answered 503 (the device
        /// retries); a long poll gets this on top of its own timeout, a push two seconds more
        /// per megabyte of body.
        public var databaseDeadline: Duration = .seconds(15)
        /// Bytes of request bodies the instance holds at once; a push past it gets 503 with
        /// `Retry-After` before its body is read. A body being handled takes about three
        /// times its size (read, decoded, stored), so the default, one largest body and
        /// 16 MiB more (``defaultInflightBytes(maximumBodyBytes:)``), keeps the memory of
        /// bodies in flight under twice ``maximumBodyBytes``.
        public var maximumInflightBytes: Int = defaultInflightBytes(maximumBodyBytes: 64 << 20)
        /// The default ``maximumInflightBytes`` for a body limit: one largest body and
        /// 16 MiB more (small requests beside one large one).
        public static func defaultInflightBytes(maximumBodyBytes: Int) -> Int { maximumBodyBytes + (16 << 20) }
        /// Requests (long polls aside) working on the database at once; past it, 503.
        public var maximumConcurrentRequests: Int = 256
        /// Lookups that find no token, per second per client address (past it, the address
        /// gets 429 before its requests reach the database).
        public var lookupsPerSecondPerAddress: Double = 20
        /// How far ahead of the service's clock a pushed transaction's clock may be; one
        /// further ahead is stored with the service's clock (and the answer says so).
        public var maximumClockSkew: Duration = .seconds(60)

        /// The registry `/metrics` exports (the one the process's metrics factory writes
        /// to); nil: no `/metrics` route.
        public var metrics: PrometheusCollectorRegistry?
        /// JWTs an app's backend issues, accepted beside tokens (nil: tokens only).
        public var jwt: JWTAuthentication?
        /// How long the health and readiness checks wait for PostgreSQL.
        public var healthDeadline: Duration = .seconds(2)

        /// The registered schema's versions, when devices of several app versions share
        /// spaces (nil: one version, `schema`); `schema` is then the newest.
        public var schemaVersions: SyncSchemaVersions?

        /// A configuration with the default limits.
        public init(schema: SyncSchema) { self.schema = schema }

        /// A configuration for several schema versions; `schema` is the newest.
        public init(versions: SyncSchemaVersions) {
            schema = versions.newest
            schemaVersions = versions
        }
    }

    let storage: SyncStorage
    let configuration: Configuration
    let gate: Gatekeeper
    let signal = HeadSignal()
    /// Answers of requests taken in the background (`Prefer: respond-async`).
    let answers = DeferredAnswers()
    let policy: SyncStorage.PushPolicy
    /// The schema versions devices speak (``VersionedSchema``).
    let versioned: VersionedSchema

    /// A service over `storage`.
    ///
    /// - Throws: `SyncErrorBody` (`invalid_schema`) when a registered table's statement
    ///   does not run.
    public init(storage: SyncStorage, configuration: Configuration) throws {
        self.storage = storage
        self.configuration = configuration
        gate = Gatekeeper(.init(requestsPerSecond: configuration.requestsPerSecond, burst: configuration.burst,
                                lookupsPerSecondPerAddress: configuration.lookupsPerSecondPerAddress,
                                inflightBytes: configuration.maximumInflightBytes, concurrentRequests: configuration.maximumConcurrentRequests))
        policy = SyncStorage.PushPolicy(maximumSkew: configuration.maximumClockSkew, checker: try RowChecker(configuration.schema),
                                        deleteRules: configuration.schema.deleteRules)
        versioned = configuration.schemaVersions.map(VersionedSchema.init) ?? VersionedSchema(configuration.schema)
    }

    /// The live channel's listener: run it with the `PostgresClient` (a `Service`), and
    /// long polls answer as soon as a push commits on any instance. Without it they read
    /// the head every 20 ms.
    public var listener: HeadListener { HeadListener(storage: storage, signal: signal) }

    /// The routes: health, readiness and metrics open to all; the API behind
    /// ``BearerAuthenticator``, one controller per resource.
    public func router() -> Router<SyncRequestContext> {
        let router = Router(context: SyncRequestContext.self)
        router.add(middleware: RequestRecorder())
        HealthController(service: self).addRoutes(to: router)
        let api = router.group("v1").add(middleware: BearerAuthenticator(service: self))
        PushController(service: self).addRoutes(to: api)
        HistoryController(service: self).addRoutes(to: api)
        RowsController(service: self).addRoutes(to: api)
        MembersController(service: self).addRoutes(to: api)
        AttachmentsController(service: self).addRoutes(to: api)
        AnswersController(service: self).addRoutes(to: api)
        return router
    }

    /// Who is asking: what a live token opens (the space, the member, its rights), and the token.
    struct Caller: Sendable {
        var access: SyncStorage.Access
        var token: String
        /// The schema version the device speaks (`Sluice-Schema-Version`; nil: not said).
        var schemaVersion: Int?
        var space: Int64 { access.space }
    }

    /// Runs `body` for the caller ``BearerAuthenticator`` put in the context; turns errors
    /// into JSON responses.
    func respond(_ context: SyncRequestContext, longPoll: Bool = false,
                 _ body: @escaping @Sendable (Caller) async throws -> Response) async -> Response {
        await respond(context, longPoll: longPoll, read: {}, { caller, _ in try await body(caller) })
    }

    /// For the caller in the context (authenticated and rate-limited by
    /// ``BearerAuthenticator``): takes a place and `bytes` of the body budget, reads what
    /// `read` reads (in this task, with no deadline), then runs `body` with it under the
    /// database deadline; turns errors into JSON responses.
    ///
    /// With `later` (a request that prefers `respond-async`), the request is answered
    /// `202 Accepted` once `read` has read it, and `body` goes on in the background, keeping
    /// the place and the bytes; its answer is fetched from `Location` (``DeferredAnswers``).
    func respond<Input: Sendable>(_ context: SyncRequestContext, longPoll: Bool = false, bytes: Int = 0,
                                  deadline: Duration? = nil, later: Bool = false, read: () async throws -> Input,
                                  _ body: @escaping @Sendable (Caller, Input) async throws -> Response) async -> Response {
        guard let caller = context.caller else {
            return Self.error(.unauthorized, "a bearer token is required (Authorization: Bearer <token>)")
        }
        do {
            return try await run(caller, context, longPoll: longPoll, bytes: bytes, deadline: deadline, later: later && !longPoll, read: read, body)
        } catch {
            return answer(error, context)
        }
    }

    /// Takes a place and `bytes` of the body budget (long polls take none), reads the
    /// input, and runs `body` under the database deadline (in the background with `later`).
    func run<Input: Sendable>(_ caller: Caller, _ context: SyncRequestContext, longPoll: Bool, bytes: Int, deadline: Duration?, later: Bool,
                              read: () async throws -> Input,
                              _ body: @escaping @Sendable (Caller, Input) async throws -> Response) async throws -> Response {
        // Long polls wait without working on the database: they take no place.
        guard longPoll || gate.enter(bytes: bytes) else {
            return Self.error(.saturated, "the service is at its limit of requests or body bytes in flight; retry")
        }
        if longPoll { gate.enterLongPoll() }
        // Given back here, or by the background work a request answered later hands them to.
        var handedOver = false
        defer { if !handedOver { if longPoll { gate.leaveLongPoll() } else { gate.leave(bytes: bytes) } } }
        let input = try await read()
        let deadline = (deadline ?? configuration.databaseDeadline) + (longPoll ? .seconds(Self.longestWait) : .zero)
        guard later else { return try await Self.withDeadline(deadline) { try await body(caller, input) } }
        let id = answers.open(space: caller.space, token: caller.token)
        handedOver = true
        Task { [gate, answers] in
            defer { gate.leave(bytes: bytes) }
            let response: Response
            do {
                response = try await Self.withDeadline(deadline) { try await body(caller, input) }
            } catch {
                response = answer(error, context)
            }
            answers.finish(id, with: response)
        }
        return Self.accepted(id)
    }

    /// A request's body, read up to `limit` bytes; over it, `too_large` naming `what` and
    /// that limit (each route has its own: a push's, a rows request's, a chunk's...).
    static func body(of request: Request, upTo limit: Int, as what: String) async throws -> ByteBuffer {
        var request = request
        do {
            return try await request.collectBody(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw SyncErrorBody(.tooLarge, message: "\(what) is larger than \(limit) bytes")
        }
    }

    /// The response to a request's error.
    func answer(_ error: any Error, _ context: SyncRequestContext) -> Response {
        switch error {
        case is NIOTooManyBytesError:
            // A body read without ``body(of:upTo:as:)``, which names its route's own limit.
            let refusal = PushLimits.bodyTooLarge(maximum: configuration.maximumBodyBytes)
            return Self.error(refusal.code, refusal.message)
        case let error as SyncErrorBody:
            // Its code says its status (``SyncErrorCode/status``).
            return Self.error(error.code, error.message)
        default:
            context.logger.error("request failed", metadata: ["reason": "\(String(reflecting: error))"])
            return Self.error(.unavailable, "the service could not reach its database; retry")
        }
    }

    /// Answers the space's head once it passes `since`, or at the timeout; the caller's
    /// credential is checked again before any answer (a member removed meanwhile gets
    /// 401: removal wakes the space's waits).
    func wait(_ request: Request, caller: Caller) async throws -> Response {
        let since = try Self.integer(request, "since") ?? 0
        let timeout = min(max(try Self.integer(request, "timeout") ?? 25, 0), Int64(Self.longestWait))
        return try Self.json(["head": try await waitForHead(after: since, seconds: timeout, caller: caller)])
    }

    /// The space's head once it passes `since`, or at the timeout (`seconds`); the caller's
    /// credential is checked again before the answer when it waited. With `device`, the head
    /// passes `since` only with a transaction another device wrote: a device's own push,
    /// which it knows, does not end its wait (it answered that device's wait as well as every
    /// other's, and the device then synced again for nothing, beside the others' pulls).
    func waitForHead(after since: Int64, seconds timeout: Int64, caller: Caller, ignoring device: String? = nil) async throws -> Int64 {
        let space = caller.space
        let deadline = ContinuousClock.now + .seconds(timeout)
        var waited = false
        var notified = false
        while true {
            // The ticket before the read: a push committing after the read still wakes us.
            let ticket = signal.ticket(space)
            // After a wait, the credential is read with the head (one round trip, not two).
            let awake = try await storage.head(space: space, opening: waited ? credential(of: caller) : nil, since: since, notBy: device)
            let head = awake.head
            let now = ContinuousClock.now
            let answering = (head > since && awake.othersWrote) || now >= deadline
            if notified || (answering && waited), !awake.opens {
                throw SyncErrorBody(.unauthorized, message: caller.access.member.map { "member '\($0)' was removed from this space" } ?? "the token was revoked")
            }
            guard !answering else { return head }
            // Woken by a notification; the head is read again every second in case one was
            // lost (a dropped listening connection), every 20 ms while nobody listens.
            let pause: Duration = signal.isListening ? .seconds(1) : .milliseconds(20)
            await signal.wait(space: space, after: ticket, upTo: min(pause, deadline - now))
            try Task.checkCancellation()
            waited = true
            notified = signal.ticket(space) != ticket
        }
    }

    /// What must still open the caller's space: a live token, or a JWT's member that was
    /// not removed.
    func credential(of caller: Caller) -> SyncStorage.Credential {
        if caller.token.hasPrefix(Self.jwtCaller), let member = caller.access.member { return .member(member) }
        return .token(caller.token)
    }

    /// The prefix of a JWT caller's ``Caller/token``: the member's name follows.
    static let jwtCaller = "jwt:"

    // MARK: - Helpers

    /// The longest long poll, in seconds.
    static let longestWait = 30

    /// The request's work took longer than ``Configuration/databaseDeadline``.
    struct DeadlineExceeded: Error {}

    /// Runs `body`, or throws `DeadlineExceeded` after `deadline` (cancelling `body`, and not
    /// waiting for it: a query stuck on a connection PostgreSQL dropped must not hold the
    /// device's request; the device retries).
    static func withDeadline<T: Sendable>(_ deadline: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let answer = FirstAnswer<T>()
        return try await withCheckedThrowingContinuation { continuation in
            answer.wait(continuation)
            // Outside the caller's task, so that it is answered at the deadline even when the
            // work does not end when cancelled; the loser is cancelled (the timer too, which
            // would otherwise sleep out the deadline after every request).
            Task {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        do { answer.finish(.success(try await body())) } catch { answer.finish(.failure(error)) }
                    }
                    group.addTask {
                        guard (try? await Task.sleep(for: deadline)) != nil else { return }
                        answer.finish(.failure(DeadlineExceeded()))
                    }
                    await group.next()
                    group.cancelAll()
                }
            }
        }
    }

    static func integer(_ request: Request, _ name: String) throws -> Int64? {
        guard let text = request.uri.queryParameters.get(name) else { return nil }
        guard let value = Int64(text), value >= 0 else {
            throw SyncErrorBody(.invalid, message: "query parameter '\(name)' must be a non-negative integer, not '\(text)'")
        }
        return value
    }

    /// A JSON body, read in place by `read` (`JSONDecoder` unless the route has a faster
    /// reader: a push's is ``SyncJSON``'s); `invalid` naming what is wrong and where when it
    /// is not `what`.
    static func decode<T: Decodable>(_ type: T.Type, _ buffer: ByteBuffer, as what: String,
                                     reading read: (UnsafeRawBufferPointer) throws -> T = { raw in try decodeJSON(T.self, raw) }) throws -> T {
        do {
            // Decoded in place: a copy of a 60 MB body would be 60 MB more in flight.
            return try buffer.withUnsafeReadableBytes { raw in try read(raw) }
        } catch {
            throw SyncErrorBody(.invalid, message: "the body is not \(what): \(describe(error))")
        }
    }

    /// `raw` decoded by `JSONDecoder`, without a copy.
    private static func decodeJSON<T: Decodable>(_ type: T.Type, _ raw: UnsafeRawBufferPointer) throws -> T {
        guard let base = raw.baseAddress, raw.count > 0 else { return try JSONDecoder().decode(type, from: Data()) }
        return try JSONDecoder().decode(type, from: Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: raw.count, deallocator: .none))
    }

    static func json(_ value: some Encodable) throws -> Response {
        json(try JSONEncoder().encode(value))
    }

    /// An answer of JSON already written (``SyncJSON``'s, for answers that carry rows).
    static func json(_ data: Data) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// An error response; 429 and 503 say when to retry (`Retry-After: 1`).
    static func error(_ code: SyncErrorCode, _ message: String) -> Response {
        let data = (try? JSONEncoder().encode(SyncErrorBody(code, message: message))) ?? Data()
        var headers: HTTPFields = [.contentType: "application/json", SyncMetrics.errorHeader: code.rawValue]
        if code.isRetryable { headers[.retryAfter] = "1" }
        return Response(status: HTTPResponse.Status(code: code.status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context), DecodingError.typeMismatch(_, let context),
             DecodingError.valueNotFound(_, let context):
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return "\(context.debugDescription)\(path.isEmpty ? "" : " at \(path)")"
        case DecodingError.keyNotFound(let key, let context):
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return "missing '\(key.stringValue)'\(path.isEmpty ? "" : " at \(path)")"
        default:
            return "\(error)"
        }
    }
}

/// The request context of the service's routes: Hummingbird's, with the client's address
/// (what unknown tokens are rate-limited by) and, past ``BearerAuthenticator``, the caller.
public struct SyncRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The client's address (nil when the channel has none).
    public let remoteAddress: SocketAddress?
    /// Who is asking (set by ``BearerAuthenticator``; nil on the open routes).
    var caller: SyncService.Caller?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
