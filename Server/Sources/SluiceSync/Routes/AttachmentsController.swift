import Hummingbird
import SluiceSyncPolicy
import SluiceSyncProtocol

/// `/v1/attachments/<hash>`: an attachment's status; `/v1/attachments/<hash>/<index>`: `PUT`
/// uploads a chunk (`?size=` the attachment's size), `GET` downloads one of a complete
/// attachment. Writers (owners and editors) upload; every member downloads.
struct AttachmentsController {
    let service: SyncService

    func addRoutes(to group: RouterGroup<SyncRequestContext>) {
        group.get("attachments/:hash") { request, context in
            let hash = context.parameters.get("hash") ?? ""
            return await service.respond(context, read: {}, { caller, _ in
                try AttachmentChecks.checkHash(hash)
                guard let status = try await service.storage.attachmentStatus(space: caller.space, hash: hash) else {
                    return SyncService.error(.notFound, "this space has no attachment \(hash)")
                }
                return try SyncService.json(status)
            })
        }
        group.put("attachments/:hash/:index") { request, context in
            let (hash, index) = (context.parameters.get("hash") ?? "", context.parameters.get("index") ?? "")
            return await service.respond(context, bytes: SyncAttachment.chunkSize, later: SyncService.answerLater(request), read: {
                try await SyncService.body(of: request, upTo: SyncAttachment.chunkSize, as: "an attachment's chunk")
            }, { caller, body in try await service.putChunk(hash: hash, index: index, request: request, body: body, caller: caller) })
        }
        group.get("attachments/:hash/:index") { request, context in
            let (hash, index) = (context.parameters.get("hash") ?? "", context.parameters.get("index") ?? "")
            return await service.respond(context, read: {}, { caller, _ in
                try AttachmentChecks.checkHash(hash)
                guard let number = Int(index), number >= 0,
                      let bytes = try await service.storage.chunk(space: caller.space, hash: hash, index: number) else {
                    return SyncService.error(.notFound, "this space has no chunk \(index) of a complete attachment \(hash)")
                }
                SyncMetrics.attachmentChunk(sent: bytes.readableBytes)
                return Response(status: .ok, headers: [.contentType: "application/octet-stream"], body: .init(byteBuffer: bytes))
            })
        }
    }
}
