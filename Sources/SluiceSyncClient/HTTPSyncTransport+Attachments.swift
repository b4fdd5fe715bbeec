import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SluiceSyncProtocol

/// Attachments' bytes, chunk by chunk (`/v1/attachments/<hash>[/<index>]`).
extension HTTPSyncTransport {
    /// What the service holds of an attachment (nil: nothing).
    public func attachmentStatus(_ attachment: SyncAttachment) async throws -> AttachmentStatus? {
        let (status, data) = try await send(URLRequest(url: server.appendingPathComponent("v1/attachments/\(attachment.hash)")))
        if status == 404 { return nil }
        try check(status, data)
        return try decode(AttachmentStatus.self, data)
    }

    /// Uploads chunk `index`; what the service holds then.
    public func upload(_ attachment: SyncAttachment, chunk index: Int, _ bytes: Data) async throws -> AttachmentStatus {
        var components = URLComponents(url: server.appendingPathComponent("v1/attachments/\(attachment.hash)/\(index)"), resolvingAgainstBaseURL: false)
        components?.queryItems = [URLQueryItem(name: "size", value: String(attachment.size))]
        guard let url = components?.url else { throw SyncClientError.protocolViolation("cannot build an attachment URL from \(server)") }
        var request = URLRequest(url: url)
        request.httpMethod = "PUT"
        request.httpBody = bytes
        request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        let (status, data) = try await send(request)
        try check(status, data)
        return try decode(AttachmentStatus.self, data)
    }

    /// Downloads chunk `index` of a complete attachment.
    public func download(_ attachment: SyncAttachment, chunk index: Int) async throws -> Data {
        let (status, data) = try await send(URLRequest(url: server.appendingPathComponent("v1/attachments/\(attachment.hash)/\(index)")))
        try check(status, data)
        guard data.count == attachment.range(ofChunk: index).count else {
            throw SyncClientError.protocolViolation("chunk \(index) of attachment \(attachment.hash) has \(data.count) bytes, not \(attachment.range(ofChunk: index).count)")
        }
        return data
    }
}
