import Foundation
import Hummingbird
import NIOCore
import SluiceSyncPolicy
import SluiceSyncProtocol

/// What the attachment routes (``AttachmentsController``) do: a chunk's upload, checked.
extension SyncService {
    func putChunk(hash: String, index: String, request: Request, body: ByteBuffer, caller: Caller) async throws -> Response {
        try caller.access.rights.checkUpload()
        let (attachment, number) = try AttachmentChecks.chunk(hash: hash, size: try Self.integer(request, "size"), index: index,
                                                              byteCount: body.readableBytes, largest: configuration.largestAttachment)
        switch try await storage.putChunk(space: caller.space, attachment: attachment, index: number, bytes: body) {
        case .stored(let status):
            SyncMetrics.attachmentChunk(received: body.readableBytes)
            return try Self.json(status)
        case .mismatch(let refusal):
            return Self.error(refusal.code, refusal.message)
        }
    }
}
