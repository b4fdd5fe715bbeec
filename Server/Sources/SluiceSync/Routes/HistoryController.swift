import Hummingbird

/// The space's history: `GET /v1/pull` (a page after `since`) and `GET /v1/wait` (the live
/// channel, a long poll until the head passes `since`).
struct HistoryController {
    let service: SyncService

    func addRoutes(to group: RouterGroup<SyncRequestContext>) {
        group.get("pull") { request, context in await service.pull(request, context) }
        group.get("wait") { request, context in
            await service.respond(context, longPoll: true) { caller in try await service.wait(request, caller: caller) }
        }
    }
}
