import Foundation
import Hummingbird
import NIOCore
import SluiceSyncProtocol

/// `/v1/attachments/<hash>`: an attachment's status; `/v1/attachments/<hash>/<index>`: `PUT`
/// uploads a chunk (`?size=` the attachment's size), `GET` downloads one of a complete
/// attachment. Writers (owners and editors) upload; every member downloads.
extension SyncService {
    func addAttachmentRoutes(to router: Router<SyncRequestContext>) {
        router.get("v1/attachments/:hash") { request, context in
            let hash = context.parameters.get("hash") ?? ""
            return await self.respond(request, context, read: {}, { caller, _ in
                try Self.checkHash(hash)
                guard let status = try await self.storage.attachmentStatus(space: caller.space, hash: hash) else {
                    return Self.error(.notFound, "this space has no attachment \(hash)")
                }
                return try Self.json(status)
            })
        }
        router.put("v1/attachments/:hash/:index") { request, context in
            let (hash, index) = (context.parameters.get("hash") ?? "", context.parameters.get("index") ?? "")
            return await self.respond(request, context, bytes: SyncAttachment.chunkSize, read: {
                var request = request
                return try await request.collectBody(upTo: SyncAttachment.chunkSize)
            }, { caller, body in try await self.putChunk(hash: hash, index: index, request: request, body: body, caller: caller) })
        }
        router.get("v1/attachments/:hash/:index") { request, context in
            let (hash, index) = (context.parameters.get("hash") ?? "", context.parameters.get("index") ?? "")
            return await self.respond(request, context, read: {}, { caller, _ in
                try Self.checkHash(hash)
                guard let number = Int(index), number >= 0,
                      let bytes = try await self.storage.chunk(space: caller.space, hash: hash, index: number) else {
                    return Self.error(.notFound, "this space has no chunk \(index) of a complete attachment \(hash)")
                }
                SyncMetrics.attachmentChunk(sent: bytes.readableBytes)
                return Response(status: .ok, headers: [.contentType: "application/octet-stream"], body: .init(byteBuffer: bytes))
            })
        }
    }

    private func putChunk(hash: String, index: String, request: Request, body: ByteBuffer, caller: Caller) async throws -> Response {
        guard caller.access.role != .viewer else {
            let who = caller.access.member.map { "member '\($0)'" } ?? "this token"
            return Self.error(.forbidden, "\(who) is a viewer of this space: it may read, not upload attachments")
        }
        try Self.checkHash(hash)
        guard let size = try Self.integer(request, "size") else {
            throw SyncErrorBody(.invalid, message: "an attachment's chunk names the attachment's size (?size=<bytes>)")
        }
        guard size <= configuration.largestAttachment else {
            return Self.error(.tooLarge, "attachment \(hash) has \(size) bytes; this service takes at most \(configuration.largestAttachment)")
        }
        let attachment = SyncAttachment(hash: hash, size: size)
        guard let number = Int(index), (0..<attachment.chunkCount).contains(number) else {
            throw SyncErrorBody(.invalid, message: "attachment \(hash) of \(size) bytes has chunks 0 to \(attachment.chunkCount - 1), not '\(index)'")
        }
        let expected = attachment.range(ofChunk: number).count
        guard body.readableBytes == expected else {
            throw SyncErrorBody(.invalid, message: "chunk \(number) of attachment \(hash) (\(size) bytes) has \(expected) bytes, not \(body.readableBytes)")
        }
        switch try await storage.putChunk(space: caller.space, attachment: attachment, index: number, bytes: body) {
        case .stored(let status):
            SyncMetrics.attachmentChunk(received: body.readableBytes)
            return try Self.json(status)
        case .mismatch(let message):
            return Self.error(.hashMismatch, "attachment \(hash): \(message)")
        }
    }

    static func checkHash(_ hash: String) throws {
        guard SyncAttachment.isValidHash(hash) else {
            throw SyncErrorBody(.invalid, message: "an attachment is named by its SHA-256, 64 lowercase hexadecimal digits, not '\(hash.prefix(80))'")
        }
    }
}
