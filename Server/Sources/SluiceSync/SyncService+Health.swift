import Hummingbird
import NIOCore

/// `GET /v1/health` and `GET /v1/ready`: checks a load balancer and an orchestrator use.
extension SyncService {
    /// Liveness: PostgreSQL answers within ``Configuration/healthDeadline``.
    func health(_ context: SyncRequestContext) async -> Response {
        do {
            try await Self.withDeadline(configuration.healthDeadline) { [storage] in try await storage.ping() }
            return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "ok")))
        } catch {
            context.logger.warning("health: PostgreSQL does not answer", metadata: ["reason": "\(String(reflecting: error))"])
            return Self.error(.unavailable, "PostgreSQL does not answer")
        }
    }

    /// Readiness: PostgreSQL answers, the service's tables are there, and the instance is
    /// below its limits of requests and body bytes in flight.
    func ready(_ context: SyncRequestContext) async -> Response {
        do {
            try await Self.withDeadline(configuration.healthDeadline) { [storage] in try await storage.checkTables() }
        } catch {
            context.logger.warning("ready: PostgreSQL or the service's tables are not there", metadata: ["reason": "\(String(reflecting: error))"])
            return Self.error(.unavailable, "PostgreSQL does not answer, or the service's tables are missing")
        }
        guard !gate.isSaturated else {
            return Self.error(.saturated, "the instance is at its limit of requests or body bytes in flight")
        }
        return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "ready")))
    }
}
