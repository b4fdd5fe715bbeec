import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics

/// What the service counts, through swift-metrics: `sluice-sync serve` exports them in
/// Prometheus's text format at `/metrics`; a service built into another program reports
/// to whatever metrics backend that program bootstrapped (nothing by default).
///
/// - `sluice_sync_requests_total{route,status}` and
///   `sluice_sync_request_duration_seconds{route}`: every request, by route (`push`, `pull`,
///   `wait`, `rows`, `attachments`, `answers`, `health`, `ready`, `metrics`, `other`).
/// - `sluice_sync_rejections_total{reason}`: requests refused, by the error code they were
///   answered with (`behind`, `unauthorized`, `rate_limited`, `saturated`, `invalid`,
///   `unavailable`, ...). Devices quarantine what a refusal leaves them holding, so these
///   are the quarantines' causes as the service sees them.
/// - `sluice_sync_pushed_transactions_total`, `sluice_sync_pushed_changes_total`,
///   `sluice_sync_pulled_bytes_total`: what went through.
/// - `sluice_sync_requests_in_flight`, `sluice_sync_inflight_bytes`,
///   `sluice_sync_long_polls`: the queue depths, as gauges.
enum SyncMetrics {
    // (Both literals are valid field names: the initializer never returns nil for them.)
    /// The response header that carries the error code of a refused request (also for a
    /// proxy's logs).
    static let errorHeader = HTTPField.Name("Sluice-Error")!
    /// The response header that carries the request's id (as the service's logs do).
    static let requestIDHeader = HTTPField.Name("X-Request-Id")!

    /// The route label of a request: the API's routes by name (a pull that waits is a long
    /// poll, timed with the waits), everything else `other` (labels stay few whatever is
    /// requested).
    static func route(_ request: Request) -> String {
        switch request.uri.path {
        case "/v1/push": "push"
        case "/v1/pull": request.uri.queryParameters.get("wait") == nil ? "pull" : "wait"
        case "/v1/wait": "wait"
        case "/v1/health": "health"
        case "/v1/ready": "ready"
        case "/metrics": "metrics"
        case "/v1/rows": "rows"
        case let path where path.hasPrefix("/v1/attachments/"): "attachments"
        case let path where path.hasPrefix("/v1/answers/"): "answers"
        default: "other"
        }
    }

    static func request(route: String, status: Int, duration: Duration, rejection: String?) {
        Counter(label: "sluice_sync_requests_total", dimensions: [("route", route), ("status", String(status))]).increment()
        Metrics.Timer(label: "sluice_sync_request_duration_seconds", dimensions: [("route", route)]).record(duration: duration)
        if let rejection { Counter(label: "sluice_sync_rejections_total", dimensions: [("reason", rejection)]).increment() }
    }

    static func pushed(transactions: Int, changes: Int) {
        Counter(label: "sluice_sync_pushed_transactions_total").increment(by: transactions)
        Counter(label: "sluice_sync_pushed_changes_total").increment(by: changes)
    }

    static func attachmentChunk(received: Int = 0, sent: Int = 0) {
        if received > 0 { Counter(label: "sluice_sync_attachment_bytes_received_total").increment(by: received) }
        if sent > 0 { Counter(label: "sluice_sync_attachment_bytes_sent_total").increment(by: sent) }
    }

    static func pulled(bytes: Int) {
        Counter(label: "sluice_sync_pulled_bytes_total").increment(by: bytes)
    }

    /// The gatekeeper's counts, after each change.
    static func depths(requests: Int, bytes: Int) {
        Gauge(label: "sluice_sync_requests_in_flight").record(requests)
        Gauge(label: "sluice_sync_inflight_bytes").record(bytes)
    }

    static func longPolls(_ count: Int) {
        Gauge(label: "sluice_sync_long_polls").record(count)
    }
}

extension Metrics.Timer {
    /// Records a `Duration`, to the nanosecond.
    func record(duration: Duration) {
        let (seconds, attoseconds) = duration.components
        recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

/// Times, counts and logs every request: one log line each (at `info`, with the request's
/// id, method, path, status and duration as metadata; refusals and failures at `notice`
/// and `warning`), the id sent back as `X-Request-Id`.
struct RequestRecorder<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let route = SyncMetrics.route(request)
        do {
            var response = try await next(request, context)
            response.headers[SyncMetrics.requestIDHeader] = context.id
            record(request, context, route: route, status: response.status.code, start: start, rejection: response.headers[SyncMetrics.errorHeader])
            return response
        } catch let error as HTTPError {
            record(request, context, route: route, status: error.status.code, start: start, rejection: "http_\(error.status.code)")
            throw error
        } catch {
            record(request, context, route: route, status: 500, start: start, rejection: "internal")
            throw error
        }
    }

    private func record(_ request: Request, _ context: Context, route: String, status: Int, start: ContinuousClock.Instant, rejection: String?) {
        let duration = ContinuousClock.now - start
        SyncMetrics.request(route: route, status: status, duration: duration, rejection: rejection)
        let level: Logger.Level = status >= 500 ? .warning : (status >= 400 ? .notice : .info)
        var metadata: Logger.Metadata = [
            "method": "\(request.method)", "path": "\(request.uri.path)", "status": "\(status)",
            "duration_ms": "\(String(format: "%.3f", Double(duration.components.attoseconds) / 1e15 + Double(duration.components.seconds) * 1e3))",
        ]
        if let rejection { metadata["error"] = "\(rejection)" }
        context.logger.log(level: level, "request", metadata: metadata)
    }
}
