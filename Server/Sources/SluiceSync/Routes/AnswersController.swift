import Hummingbird

/// `GET /v1/answers/<id>?wait=S`: the answer of a request the service took in the background
/// (``SyncService/answerLater(_:)``), waiting up to S seconds (at most 30) for it: the
/// request's own answer, or `202 Accepted` again while it is worked on, or `answer_unknown`
/// (404) when this instance does not hold it for this caller (send the request again).
struct AnswersController {
    let service: SyncService

    func addRoutes(to group: RouterGroup<SyncRequestContext>) {
        group.get("answers/:id") { request, context in
            let id = context.parameters.get("id") ?? ""
            return await service.respond(context, longPoll: true) { caller in
                let wait = min(try SyncService.integer(request, "wait") ?? 0, Int64(SyncService.longestWait))
                switch await service.answers.take(id, space: caller.space, token: caller.token, waiting: .seconds(wait)) {
                case .answer(let response):
                    return response
                case .pending:
                    return SyncService.accepted(id)
                case .unknown:
                    return SyncService.error(.answerUnknown, "this instance holds no answer \(id) for this caller: send the request again")
                }
            }
        }
    }
}
