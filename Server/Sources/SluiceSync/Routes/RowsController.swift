import Hummingbird

/// `POST /v1/rows`: the rows of a device's subscriptions (partial sync), and snapshots.
struct RowsController {
    let service: SyncService

    func addRoutes(to group: RouterGroup<SyncRequestContext>) {
        group.post("rows") { request, context in await service.rows(request, context) }
    }
}
