import Hummingbird

/// `POST /v1/members`: an owner shares the space (``SyncService/share(_:caller:)``).
struct MembersController {
    let service: SyncService

    func addRoutes(to group: RouterGroup<SyncRequestContext>) {
        group.post("members") { request, context in
            await service.respond(context, bytes: 64 << 10, read: {
                try await SyncService.body(of: request, upTo: 64 << 10, as: "a share request")
            }, { caller, body in
                try await service.share(body, caller: caller)
            })
        }
    }
}
