import Foundation
import Logging
import NIOCore
import PostgresNIO
import SluiceSyncPolicy
import SluiceSyncProtocol

/// Attachments' bytes, per space and SHA-256, in chunks of ``SyncAttachment/chunkSize``
/// (`sluice_attachment`, `sluice_attachment_chunk`). An attachment is complete once every
/// chunk is here and their bytes match its hash; only then may a push name it or a device
/// download it. Spaces never share bytes: an upload to one says nothing to another.
/// `touched_at` is when a chunk last came or a push last named it: compaction deletes the
/// attachments nothing refers to that were not touched within its horizon.
extension SyncStorage {
    /// What the space holds of `hash` (nil: nothing).
    func attachmentStatus(space: Int64, hash: String) async throws -> AttachmentStatus? {
        try await client.withConnection { connection in try await status(space: space, hash: hash, connection) }
    }

    private func status(space: Int64, hash: String, _ connection: PostgresConnection) async throws -> AttachmentStatus? {
        let rows = try await connection.query("SELECT size, complete FROM sluice_attachment WHERE space_id = \(space) AND hash = \(hash)", logger: logger)
        var found: (Int64, Bool)?
        for try await row in rows.decode((Int64, Bool).self) { found = row }
        guard let (size, complete) = found else { return nil }
        var chunks: [Int] = []
        let indexes = try await connection.query("SELECT idx FROM sluice_attachment_chunk WHERE space_id = \(space) AND hash = \(hash) ORDER BY idx",
                                                 logger: logger)
        for try await index in indexes.decode(Int32.self) { chunks.append(Int(index)) }
        return AttachmentStatus(attachment: SyncAttachment(hash: hash, size: size), complete: complete, chunks: chunks)
    }

    /// Why an upload ended without completing its attachment.
    enum ChunkOutcome: Sendable {
        case stored(AttachmentStatus)
        /// Every chunk came, and their bytes do not match the hash: all were dropped
        /// (``AttachmentChecks/mismatch(of:actual:length:)``).
        case mismatch(SyncErrorBody)
    }

    /// Stores chunk `index` of `attachment` (replacing one sent before); once every chunk is
    /// here, checks the bytes against the hash, in the same transaction: complete, or every
    /// chunk dropped. Another size than an incomplete upload's starts it over (one of the
    /// two is wrong, and only the right one can complete).
    func putChunk(space: Int64, attachment: SyncAttachment, index: Int, bytes: ByteBuffer) async throws -> ChunkOutcome {
        let (hash, size) = (attachment.hash, attachment.size)
        return try await client.withTransaction(logger: logger) { connection in
            try await connection.query("""
                INSERT INTO sluice_attachment (space_id, hash, size) VALUES (\(space), \(hash), \(size))
                ON CONFLICT (space_id, hash) DO UPDATE SET touched_at = now()
                """, logger: logger)
            let rows = try await connection.query("SELECT size, complete FROM sluice_attachment WHERE space_id = \(space) AND hash = \(hash) FOR UPDATE",
                                                  logger: logger)
            var found: (Int64, Bool) = (size, false)
            for try await row in rows.decode((Int64, Bool).self) { found = row }
            if found.1, let status = try await status(space: space, hash: hash, connection) { return .stored(status) }
            if found.0 != size {
                try await connection.query("DELETE FROM sluice_attachment_chunk WHERE space_id = \(space) AND hash = \(hash)", logger: logger)
                try await connection.query("UPDATE sluice_attachment SET size = \(size) WHERE space_id = \(space) AND hash = \(hash)", logger: logger)
            }
            let number = Int32(index)
            try await connection.query("""
                INSERT INTO sluice_attachment_chunk (space_id, hash, idx, data) VALUES (\(space), \(hash), \(number), \(bytes))
                ON CONFLICT (space_id, hash, idx) DO UPDATE SET data = excluded.data
                """, logger: logger)
            let counted = try await connection.query("SELECT count(*) FROM sluice_attachment_chunk WHERE space_id = \(space) AND hash = \(hash)",
                                                     logger: logger)
            var count = 0
            for try await value in counted.decode(Int64.self) { count = Int(value) }
            if count == attachment.chunkCount {
                // Read back in order and hashed as it streams: the bytes are what the hash says, or none stay.
                var hasher = SyncAttachment.Hasher()
                var length: Int64 = 0
                let chunks = try await connection.query("SELECT data FROM sluice_attachment_chunk WHERE space_id = \(space) AND hash = \(hash) ORDER BY idx",
                                                        logger: logger)
                for try await chunk in chunks.decode(ByteBuffer.self) {
                    hasher.update(chunk.readableBytesView)
                    length += Int64(chunk.readableBytes)
                }
                if let refusal = AttachmentChecks.mismatch(of: attachment, actual: hasher.finish(), length: length) {
                    try await connection.query("DELETE FROM sluice_attachment_chunk WHERE space_id = \(space) AND hash = \(hash)", logger: logger)
                    return .mismatch(refusal)
                }
                try await connection.query("UPDATE sluice_attachment SET complete = true WHERE space_id = \(space) AND hash = \(hash)", logger: logger)
            }
            guard let status = try await status(space: space, hash: hash, connection) else {
                return .mismatch(SyncErrorBody(.hashMismatch, message: "attachment \(hash) disappeared while it was written: upload it again"))
            }
            return .stored(status)
        }
    }

    /// Chunk `index` of a complete attachment (nil: no such chunk, or not complete).
    func chunk(space: Int64, hash: String, index: Int) async throws -> ByteBuffer? {
        let number = Int32(index)
        let rows = try await client.query("""
            SELECT c.data FROM sluice_attachment_chunk c JOIN sluice_attachment a USING (space_id, hash)
            WHERE c.space_id = \(space) AND c.hash = \(hash) AND c.idx = \(number) AND a.complete
            """, logger: logger)
        for try await data in rows.decode(ByteBuffer.self) { return data }
        return nil
    }

    /// Which of `hashes` the space holds complete, with their sizes; those are touched (a
    /// push names them: compaction keeps them).
    func completeAttachments(space: Int64, among hashes: [String]) async throws -> [String: Int64] {
        let rows = try await client.query("""
            UPDATE sluice_attachment SET touched_at = now() WHERE space_id = \(space) AND hash = ANY(\(hashes)) AND complete RETURNING hash, size
            """, logger: logger)
        var found: [String: Int64] = [:]
        for try await (hash, size) in rows.decode((String, Int64).self) { found[hash] = size }
        return found
    }
}
