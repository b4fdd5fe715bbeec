import SluiceSyncProtocol

/// The service's rules for attachments, over whatever stores their bytes: what a chunk's
/// upload must name, the check of the bytes once every chunk is there, and the check of
/// every attachment a push names against what the space holds complete. The PostgreSQL
/// service and the in-memory one answer the same refusals with the same codes.
public enum AttachmentChecks {
    /// The attachment and chunk number a chunk's upload names, checked: a SHA-256, a size
    /// (`?size=`) within `largest`, a chunk of that size, and `byteCount` bytes, as many as
    /// that chunk holds.
    ///
    /// - Throws: `invalid` naming what is wrong, or `too_large` for a size over `largest`.
    public static func chunk(hash: String, size: Int64?, index: String, byteCount: Int, largest: Int64) throws(SyncErrorBody) -> (SyncAttachment, Int) {
        try checkHash(hash)
        guard let size else {
            throw SyncErrorBody(.invalid, message: "an attachment's chunk names the attachment's size (?size=<bytes>)")
        }
        guard size <= largest else {
            throw SyncErrorBody(.tooLarge, message: "attachment \(hash) has \(size) bytes; this service takes at most \(largest)")
        }
        let attachment = SyncAttachment(hash: hash, size: size)
        guard let number = Int(index), (0..<attachment.chunkCount).contains(number) else {
            throw SyncErrorBody(.invalid, message: "attachment \(hash) of \(size) bytes has chunks 0 to \(attachment.chunkCount - 1), not '\(index.prefix(80))'")
        }
        let expected = attachment.range(ofChunk: number).count
        guard byteCount == expected else {
            throw SyncErrorBody(.invalid, message: "chunk \(number) of attachment \(hash) (\(size) bytes) has \(expected) bytes, not \(byteCount)")
        }
        return (attachment, number)
    }

    /// - Throws: `invalid` when `hash` is not 64 lowercase hexadecimal digits.
    public static func checkHash(_ hash: String) throws(SyncErrorBody) {
        guard SyncAttachment.isValidHash(hash) else {
            throw SyncErrorBody(.invalid, message: "an attachment is named by its SHA-256, 64 lowercase hexadecimal digits, not '\(hash.prefix(80))'")
        }
    }

    /// Why every chunk of `attachment` is here and the upload is not complete: the bytes
    /// (hashed in order to `actual`, `length` of them) are not what it names (nil: they are).
    /// The storage drops every chunk then, in the same transaction.
    public static func mismatch(of attachment: SyncAttachment, actual: String, length: Int64) -> SyncErrorBody? {
        guard actual != attachment.hash || length != attachment.size else { return nil }
        return SyncErrorBody(.hashMismatch, message: "attachment \(attachment.hash): the \(length) bytes uploaded hash to \(actual), not \(attachment.hash); every chunk was dropped: upload them again")
    }

    /// The first attachment `push` names that the space does not hold complete with the
    /// size it names (``problem(_:held:)``), asking `held` (only when the push names any)
    /// which of their hashes the space holds complete, with their sizes.
    public static func problem(in push: PushRequest, held: ([String]) async throws -> [String: Int64]) async rethrows -> SyncErrorBody? {
        let named = named(in: push)
        guard !named.isEmpty else { return nil }
        return problem(named, held: try await held(Array(Set(named.keys.map(\.hash)))))
    }

    /// Every attachment `push` names, each with the first place that names it.
    static func named(in push: PushRequest) -> [SyncAttachment: String] {
        var named: [SyncAttachment: String] = [:]
        for (index, transaction) in push.transactions.enumerated() {
            for change in transaction.changes {
                for (column, value) in change.values ?? [:] {
                    guard case .attachment(let attachment) = value, named[attachment] == nil else { continue }
                    named[attachment] = "transaction \(index) (local \(transaction.local)): \(change.table).\(column) of \(change.id): attachment \(attachment.hash)"
                }
            }
        }
        return named
    }

    /// The first of `named` (``named(in:)``) the space does not hold complete with the size
    /// it names, given `held` (hash → size of those it holds complete): `attachment_missing`
    /// (the device uploads it first) or `attachment_mismatch` (no device could fill it).
    /// Nil: every one is there, as named.
    static func problem(_ named: [SyncAttachment: String], held: [String: Int64]) -> SyncErrorBody? {
        for (attachment, place) in named.sorted(by: { $0.value < $1.value }) {
            guard let size = held[attachment.hash] else {
                return SyncErrorBody(.attachmentMissing, message: place + " is not uploaded (PUT its chunks to /v1/attachments/<hash>/<index> first); nothing was applied")
            }
            if size != attachment.size {
                return SyncErrorBody(.attachmentMismatch, message: place + " names \(attachment.size) bytes, and the service holds it with \(size); nothing was applied")
            }
        }
        return nil
    }
}
