import Foundation
import SluiceSyncClient
import SluiceSyncPolicy
import SluiceSyncProtocol

/// Attachments' bytes in memory, as the service keeps them in PostgreSQL: chunks by hash,
/// complete once every chunk is there and their bytes match the hash (otherwise every chunk
/// is dropped), another size than an incomplete upload's starting it over; only a complete
/// attachment may be named by a push or downloaded.
extension HistoryService {
    struct StoredAttachment {
        var size: Int64
        var chunks: [Int: Data] = [:]
        var complete = false
        /// When a chunk last came or a push last named it (compaction keeps it within its horizon).
        var touched = Date()
    }

    func attachmentStatus(_ hash: String) throws -> AttachmentStatus? {
        try Self.refusing { () throws(SyncErrorBody) in try AttachmentChecks.checkHash(hash) }
        return lock.withLock { status(hash) }
    }

    /// Inside `lock`.
    private func status(_ hash: String) -> AttachmentStatus? {
        attachments[hash].map { AttachmentStatus(attachment: SyncAttachment(hash: hash, size: $0.size), complete: $0.complete, chunks: $0.chunks.keys.sorted()) }
    }

    func putChunk(hash: String, size: Int64, index: String, _ bytes: Data, token: String) throws -> AttachmentStatus {
        let access = try access(token)
        let (attachment, number) = try Self.refusing { () throws(SyncErrorBody) -> (SyncAttachment, Int) in
            try access.checkUpload()
            return try AttachmentChecks.chunk(hash: hash, size: size, index: index, byteCount: bytes.count, largest: largestAttachment)
        }
        let outcome = lock.withLock { () -> Result<AttachmentStatus, SyncErrorBody> in
            var stored = attachments[hash] ?? StoredAttachment(size: size)
            if !stored.complete {
                if stored.size != size { stored = StoredAttachment(size: size) }
                stored.chunks[number] = bytes
                stored.touched = Date()
                if stored.chunks.count == attachment.chunkCount {
                    var hasher = SyncAttachment.Hasher()
                    for index in stored.chunks.keys.sorted() { hasher.update(stored.chunks[index] ?? Data()) }
                    let length = stored.chunks.values.reduce(Int64(0)) { $0 + Int64($1.count) }
                    if let refusal = AttachmentChecks.mismatch(of: attachment, actual: hasher.finish(), length: length) {
                        stored.chunks = [:]
                        attachments[hash] = stored
                        return .failure(refusal)
                    }
                    stored.complete = true
                }
            }
            attachments[hash] = stored
            return status(hash).map { .success($0) } ?? .failure(SyncErrorBody(.notFound, message: "attachment \(hash) is gone"))
        }
        return try Self.refusing { () throws(SyncErrorBody) in try outcome.get() }
    }

    func chunk(_ attachment: SyncAttachment, index: Int) throws -> Data {
        try Self.refusing { () throws(SyncErrorBody) in try AttachmentChecks.checkHash(attachment.hash) }
        guard let bytes = lock.withLock({ attachments[attachment.hash].flatMap { $0.complete ? $0.chunks[index] : nil } }) else {
            throw Self.rejection(SyncErrorBody(.notFound, message: "this space has no chunk \(index) of a complete attachment \(attachment.hash)"))
        }
        return bytes
    }

    /// Which of `hashes` are held complete, with their sizes; those are touched (a push
    /// names them: compaction keeps them).
    func completeAttachments(among hashes: [String]) -> [String: Int64] {
        lock.withLock {
            let now = Date()
            return Dictionary(uniqueKeysWithValues: hashes.compactMap { hash in
                guard attachments[hash]?.complete == true, let size = attachments[hash]?.size else { return nil }
                attachments[hash]?.touched = now
                return (hash, size)
            })
        }
    }

    /// `body`'s refusal as the HTTP transport throws it.
    static func refusing<T>(_ body: () throws(SyncErrorBody) -> T) throws -> T {
        do { return try body() } catch { throw rejection(error) }
    }

    /// A refusal as the HTTP transport throws it.
    static func rejection(_ refusal: SyncErrorBody) -> SyncClientError { .rejected(status: refusal.code.status, refusal) }
}
