import Foundation
import Hummingbird
import NIOCore
import SluiceSyncProtocol

/// What the attachment routes (``AttachmentsController``) do: a chunk's upload, checked.
extension SyncService {
    func putChunk(hash: String, index: String, request: Request, body: ByteBuffer, caller: Caller) async throws -> Response {
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
