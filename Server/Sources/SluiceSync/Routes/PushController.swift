import Hummingbird

/// `POST /v1/push`: a device's transactions (``SyncService/push(_:caller:)``).
struct PushController {
    let service: SyncService

    func addRoutes(to group: RouterGroup<SyncRequestContext>) {
        let configuration = service.configuration
        group.post("push") { request, context in
            // A push writes as many rows as it carries: two seconds more per megabyte of body.
            let length = request.headers[.contentLength].flatMap { Int($0) }
            let megabytes = length.map { $0 >> 20 } ?? 0
            // The body is read in the handler's own task, before the database deadline starts:
            // work the deadline gives up on goes on in the background, and a body still being
            // read there was read a second time by Hummingbird after the 503 (a crash).
            return await service.respond(context, bytes: min(length ?? configuration.maximumBodyBytes, configuration.maximumBodyBytes),
                                         deadline: configuration.databaseDeadline + .seconds(2 * megabytes),
                                         later: SyncService.answerLater(request), read: {
                var request = request
                return try await request.collectBody(upTo: configuration.maximumBodyBytes)
            }, { caller, body in
                try await service.push(body, caller: caller)
            })
        }
    }
}
