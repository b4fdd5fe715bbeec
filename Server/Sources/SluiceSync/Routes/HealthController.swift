import Hummingbird
import NIOCore

/// What needs no credential: `GET /v1/health` (liveness), `GET /v1/ready` (readiness) and,
/// with a registry configured, `GET /metrics`.
struct HealthController {
    let service: SyncService

    func addRoutes(to router: Router<SyncRequestContext>) {
        router.get("v1/health") { _, context in await service.health(context) }
        router.get("v1/ready") { _, context in await service.ready(context) }
        if let registry = service.configuration.metrics {
            router.get("metrics") { _, _ in
                Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                         body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
            }
        }
    }
}
