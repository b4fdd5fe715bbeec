import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(SluiceInternal) import SluiceSyncProtocol

/// HTTP to the sync service (URLSession; Foundation's networking on Linux): the transport
/// of a ``SyncClient`` made with a server URL.
public struct HTTPSyncTransport: SyncTransport {
    let server: URL
    /// The bearer, shared by every copy of this transport (a follow loop's too), so that
    /// a refreshed one is used from the next request on.
    let bearer: Bearer
    let session: URLSession
    /// A request whose body is larger than this many bytes asks to be answered once its body
    /// is in (``defaultAnswerLaterAbove``: above 64 KiB on Linux); nil: never.
    var answerLaterAbove: Int? = Self.defaultAnswerLaterAbove

    /// The bearer token or JWT requests carry; replaced when the app refreshes it.
    final class Bearer: @unchecked Sendable {
        // @unchecked Sendable: `value` is guarded by `lock`.
        private let lock = NSLock()
        private var value: String

        init(_ value: String) { self.value = value }

        var current: String {
            get { lock.withLock { value } }
            set { lock.withLock { value = newValue } }
        }
    }

    /// The space named in `Sluice-Space` (a JWT's bearer may open several).
    let space: String?
    /// The schema version sent as `Sluice-Schema-Version` (nil: none).
    let schemaVersion: Int?

    /// A transport to the service at `server`.
    ///
    /// - Parameters:
    ///   - server: the service's base URL.
    ///   - token: the bearer (a token the service issued, or a JWT).
    ///   - space: the space a JWT's requests name (`Sluice-Space`); nil for a token's.
    ///   - schemaVersion: the app's schema version (`Sluice-Schema-Version`); nil: none.
    ///   - timeout: how long a request waits for its answer, in seconds.
    public init(server: URL, token: String, space: String? = nil, schemaVersion: Int? = nil, timeout: TimeInterval = 30) {
        self.server = server
        bearer = Bearer(token)
        self.space = space
        self.schemaVersion = schemaVersion
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        session = URLSession(configuration: configuration)
    }

    public func push(_ push: PushRequest) async throws -> SyncPushOutcome {
        var request = URLRequest(url: server.appendingPathComponent("v1/push"))
        request.httpMethod = "POST"
        request.httpBody = try SyncJSON.encode(push)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        // The service may take a while to write a large push before it answers.
        request.timeoutInterval = 300
        let (status, data) = try await send(request)
        if status == 409 {
            let body = try? JSONDecoder().decode(SyncErrorBody.self, from: data)
            if let body, body.code == .identityConflict { return .identityConflict(body.message) }
            // A 409 without a body the service wrote (a proxy's) is taken as behind: pulling
            // first is safe. Another code is a refusal: a replay, an attachment it names that
            // is not on the service (the next sync uploads it again). A replay was taken as
            // behind, and the client pulled and pushed it again 50 times (found by the
            // conformance scenarios: the in-memory service said replay).
            if let body, body.code != .behind { throw SyncClientError.rejected(status: status, body) }
            return .behind
        }
        try check(status, data)
        return .accepted(try decode(PushResponse.self, data))
    }

    public func pull(since: Int64, limit: Int?, device: String?) async throws -> PullResponse {
        try await pull(since: since, limit: limit, device: device, waiting: nil).page
    }

    /// A page that waited for the history to pass `since`; nil from a service that answered
    /// without waiting (an older one: it sends no `Sluice-Waited`).
    public func pull(since: Int64, device: String?, waiting timeout: Int) async throws -> PullResponse? {
        let (page, waited) = try await pull(since: since, limit: nil, device: device, waiting: timeout)
        return waited ? page : nil
    }

    private func pull(since: Int64, limit: Int?, device: String?, waiting timeout: Int?) async throws -> (page: PullResponse, waited: Bool) {
        var components = URLComponents(url: server.appendingPathComponent("v1/pull"), resolvingAgainstBaseURL: false)
        components?.queryItems = [URLQueryItem(name: "since", value: String(since))] + (limit.map { [URLQueryItem(name: "limit", value: String($0))] } ?? [])
            + (device.map { [URLQueryItem(name: "device", value: $0)] } ?? []) + (timeout.map { [URLQueryItem(name: "wait", value: String($0))] } ?? [])
        guard let url = components?.url else { throw SyncClientError.protocolViolation("cannot build a pull URL from \(server)") }
        var request = URLRequest(url: url)
        if let timeout { request.timeoutInterval = TimeInterval(timeout + 15) }
        let (status, data, headers) = try await exchange(request)
        try check(status, data)
        // Pages of history carry rows: SyncJSON reads them ten times as fast as JSONDecoder.
        let page = try decode(PullResponse.self, data) { try SyncJSON.decode(PullResponse.self, from: $0) }
        return (page, headers["sluice-waited"] != nil)
    }

    /// One page of a round of a subset's rows.
    public func rows(_ rows: RowsRequest) async throws -> RowsResponse {
        try await post("v1/rows", rows) { try SyncJSON.decode(RowsResponse.self, from: $0) }
    }

    /// Shares the space with a user (an owner's token); the member's new token.
    public func share(_ share: ShareRequest) async throws -> ShareResponse {
        try await post("v1/members", share, answer: ShareResponse.self)
    }

    /// POSTs `body` as JSON; the answer, decoded, or the error it is.
    private func post<Answer: Decodable>(_ path: String, _ body: some Encodable, answer: Answer.Type = Answer.self,
                                         reading read: (Data) throws -> Answer = { try JSONDecoder().decode(Answer.self, from: $0) }) async throws -> Answer {
        var request = URLRequest(url: server.appendingPathComponent(path))
        request.httpMethod = "POST"
        request.httpBody = try JSONEncoder().encode(body)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let (status, data) = try await send(request)
        try check(status, data)
        return try decode(Answer.self, data, reading: read)
    }

    public func updateBearer(_ token: String) { bearer.current = token }

    /// Waits until the head passes `since` (or `timeout` seconds); returns the head.
    public func wait(since: Int64, timeout: Int) async throws -> Int64 {
        var components = URLComponents(url: server.appendingPathComponent("v1/wait"), resolvingAgainstBaseURL: false)
        components?.queryItems = [URLQueryItem(name: "since", value: String(since)), URLQueryItem(name: "timeout", value: String(timeout))]
        guard let url = components?.url else { throw SyncClientError.protocolViolation("cannot build a wait URL from \(server)") }
        var request = URLRequest(url: url)
        request.timeoutInterval = TimeInterval(timeout + 15)
        let (status, data) = try await send(request)
        try check(status, data)
        struct Head: Decodable { var head: Int64 }
        return try decode(Head.self, data).head
    }

    /// Sends a request; an answer that says "try again" (429 and 503 with `Retry-After`, a
    /// proxy's 502 and 504) is sent again after the pause it asks for (1 s when it names
    /// none, at most ``longestRetryPause``), up to ``retries`` times, and then returned as it
    /// is. Every request is safe to repeat: the service skips a push's transactions it took
    /// already (it may answer 503 when its database deadline passes while the push goes on).
    func send(_ request: URLRequest) async throws -> (Int, Data) {
        let (status, data, _) = try await exchange(request)
        return (status, data)
    }

    /// ``send(_:)``, with the answer's headers (by name in lower case).
    func exchange(_ request: URLRequest) async throws -> (Int, Data, headers: [String: String]) {
        var request = authorized(request)
        if let body = request.httpBody, let above = answerLaterAbove, body.count > above {
            request.setValue("respond-async", forHTTPHeaderField: "Prefer")
        }
        var attempt = 0
        while true {
            let (status, data, headers) = try await answer(of: request)
            if status == 404, attempt < Self.retries, (try? JSONDecoder().decode(SyncErrorBody.self, from: data))?.code == .answerUnknown {
                // The instance that took it is not the one asked (or restarted): send it again.
                attempt += 1
                continue
            }
            guard [429, 502, 503, 504].contains(status), attempt < Self.retries else { return (status, data, headers) }
            let retryAfter = headers["retry-after"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }.map { Duration.seconds(max(0, $0)) }
            attempt += 1
            try await Task.sleep(for: min(retryAfter ?? .seconds(1), Self.longestRetryPause))
        }
    }

    /// How many times an answer that says "try again" is followed before it is returned.
    static var retries: Int { 4 }
    /// The longest pause before sending a request again, whatever `Retry-After` says.
    static var longestRetryPause: Duration { .seconds(10) }

    /// The request's answer: what it is answered, or, when the service took it to answer
    /// later (`202 Accepted` to `Prefer: respond-async`), what `GET /v1/answers/<id>` gives
    /// once the work is done.
    private func answer(of request: URLRequest) async throws -> (Int, Data, headers: [String: String]) {
        var answer = try await sendOnce(request)
        while answer.0 == 202, request.value(forHTTPHeaderField: "Prefer") != nil,
              let location = answer.headers["location"], location.hasPrefix("/v1/answers/") {
            let id = location.dropFirst("/v1/answers/".count)
            guard !id.isEmpty, id.allSatisfy({ $0.isHexDigit || $0 == "-" }) else {
                throw SyncClientError.protocolViolation("the service answered later at \(location), which names no answer")
            }
            var components = URLComponents(url: server.appendingPathComponent("v1/answers/\(id)"), resolvingAgainstBaseURL: false)
            components?.queryItems = [URLQueryItem(name: "wait", value: String(Self.answerWait))]
            guard let url = components?.url else { throw SyncClientError.protocolViolation("cannot build an answer URL from \(server)") }
            var fetch = authorized(URLRequest(url: url))
            fetch.timeoutInterval = TimeInterval(Self.answerWait + 15)
            answer = try await sendOnce(fetch)
        }
        return answer
    }

    /// `request` with the headers every request carries: the bearer (the current one), the
    /// space a JWT names, the schema version.
    private func authorized(_ request: URLRequest) -> URLRequest {
        var request = request
        request.setValue("Bearer \(bearer.current)", forHTTPHeaderField: "Authorization")
        if let space { request.setValue(space, forHTTPHeaderField: "Sluice-Space") }
        if let schemaVersion { request.setValue(String(schemaVersion), forHTTPHeaderField: "Sluice-Schema-Version") }
        return request
    }

    /// How long a fetch of an answer waits for it, in seconds (then it asks again).
    static var answerWait: Int { 25 }

    private func sendOnce(_ request: URLRequest) async throws -> (Int, Data, headers: [String: String]) {
        do {
            let (data, response) = try await data(for: request)
            guard let http = response as? HTTPURLResponse else { throw SyncClientError.protocolViolation("not an HTTP response") }
            let headers = http.allHeaderFields.compactMap { name, value in (name as? String).map { ($0.lowercased(), "\(value)") } }
            return (http.statusCode, data, Dictionary(headers, uniquingKeysWith: { first, _ in first }))
        } catch let error as SyncClientError {
            throw error
        } catch {
            if Task.isCancelled { throw CancellationError() }
            throw SyncClientError.offline("\(request.url?.absoluteString ?? "?"): \(error.localizedDescription)")
        }
    }

    /// `session.data(for:)`, except that cancelling the calling task returns at once with
    /// `CancellationError` and leaves the request to finish on its own (its answer is dropped;
    /// every request is safe to repeat). Cancelling the `URLSessionTask` on Linux is not safe:
    /// swift-corelibs-foundation deadlocked in the async API's cancel (a CI run hung 30
    /// minutes) and crashed in libdispatch's event loop after the completion-handler API's.
    private func data(for request: URLRequest) async throws -> (Data, URLResponse) {
        let answer = FirstAnswer<(Data, URLResponse)>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Data, URLResponse), any Error>) in
                guard answer.wait(continuation) else { return }
                session.dataTask(with: request) { data, response, error in
                    if let error {
                        answer.finish(.failure(error))
                    } else if let response {
                        answer.finish(.success((data ?? Data(), response)))
                    } else {
                        answer.finish(.failure(URLError(.badServerResponse)))
                    }
                }.resume()
            }
        } onCancel: {
            answer.finish(.failure(CancellationError()))
        }
    }

    func check(_ status: Int, _ data: Data) throws {
        guard !(200..<300).contains(status) else { return }
        let body = (try? JSONDecoder().decode(SyncErrorBody.self, from: data))
            ?? SyncErrorBody(error: "http_\(status)", message: String(decoding: data.prefix(500), as: UTF8.self))
        // The code decides; a body without one (a proxy's page) goes by its status.
        if body.code == .unauthorized || status == 401 { throw SyncClientError.unauthorized(body.message) }
        if body.code.isRetryable || [429, 502, 503, 504].contains(status) {
            throw SyncClientError.offline("the service answered \(status): \(body.message)")
        }
        throw SyncClientError.rejected(status: status, body)
    }

    func decode<T: Decodable>(_ type: T.Type, _ data: Data, reading read: (Data) throws -> T = { try JSONDecoder().decode(T.self, from: $0) }) throws -> T {
        do {
            return try read(data)
        } catch {
            throw SyncClientError.protocolViolation("cannot read the service's answer as \(T.self): \(error)")
        }
    }
}
