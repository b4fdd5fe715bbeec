import Hummingbird

/// `POST /v1/members`: an owner shares the space (``SyncService/share(_:caller:)``).
struct MembersController {
    let service: SyncService

    func addRoutes(to group: RouterGroup<SyncRequestContext>) {
        group.post("members") { request, context in
            await service.respond(context, bytes: 64 << 10, read: {
                var request = request
                return try await request.collectBody(upTo: 64 << 10)
            }, { caller, body in
                try await service.share(body, caller: caller)
            })
        }
    }
}
