import Foundation
import SluiceSyncProtocol
import Sluice

extension SyncClient {
    // MARK: - Attachments

    /// The attachments rows here point at whose bytes are not here yet (their columns are
    /// NULL): pulled with ``AttachmentFetch/lazy``, or not fetched yet.
    ///
    /// - Returns: one entry per row and column, by table, row and column.
    public func pendingAttachments() async throws -> [PendingAttachment] {
        let engine = engine
        let subscriptions = subscriptions
        return try await store.write { db in
            try engine.attachmentsToFetch(eagerOnly: false, subscriptions: subscriptions, rows: nil, db)
        }.flatMap(\.1).sorted { ($0.table, $0.rowID, $0.column) < ($1.table, $1.rowID, $1.column) }
    }

    /// Fetches the bytes of attachments not here yet, lazy ones included, and writes them
    /// into their rows (one local transaction per attachment, never pushed back; live
    /// queries see an ordinary modification). A cut download goes on from the chunks
    /// already here the next time.
    ///
    /// ```swift
    /// try await client.fetchAttachments(table: "photo", rowIDs: [photo.id])
    /// ```
    ///
    /// - Parameters:
    ///   - table: only this table's (nil: every table's).
    ///   - rowIDs: only these rows' (with `table`).
    /// - Returns: how many row columns were filled.
    /// - Throws: `SyncClientError` (`.offline`: call again, what came is kept), `StoreError`.
    @discardableResult
    public func fetchAttachments(table: String? = nil, rowIDs: [Int64]? = nil) async throws -> Int {
        var report = Report(pushed: 0, pulled: 0, cursor: 0)
        return try await fetchAttachments(eagerOnly: false, rows: table.map { ($0, rowIDs.map(Set.init)) }, into: &report)
    }

    /// Fetches what is to fetch (with `eagerOnly`, what the configuration and subscriptions
    /// fetch in every sync); returns how many row columns were filled.
    @discardableResult
    func fetchAttachments(eagerOnly: Bool, rows: (table: String, rowIDs: Set<Int64>?)?, into report: inout Report) async throws -> Int {
        let engine = engine
        let subscriptions = subscriptions
        // Nothing to write (nor a transaction) in the usual sync: no attachments waiting.
        guard engine.syncsAttachments, try await store.read({ db in try engine.hasAttachmentsToFetch(db) }) else { return 0 }
        let wanted = try await store.write { db in try engine.attachmentsToFetch(eagerOnly: eagerOnly, subscriptions: subscriptions, rows: rows, db) }
        var filled = 0
        for (attachment, _) in wanted {
            // Bytes another row here holds are not fetched again.
            if let count = try await store.write({ db in try engine.fillFromHeld(attachment, db) }) {
                filled += count
                continue
            }
            let here = try await store.read { db in try engine.fetchedChunks(of: attachment, db) }
            var missing = false
            for index in 0..<attachment.chunkCount where !here.contains(index) {
                let bytes: Data
                do {
                    bytes = try await transport.download(attachment, chunk: index)
                } catch SyncClientError.rejected(let status, _) where status == 404 {
                    // Not on the service (its upload is not over, or it was deleted): it stays
                    // to fetch, and the others come.
                    missing = true
                    break
                }
                // Each chunk is kept as it comes: a cut download goes on from here.
                try await store.write { db in try engine.saveChunk(attachment, index: index, bytes, db) }
                report.chunksFetched += 1
            }
            if missing { continue }
            filled += try await store.write { db in try engine.fill(attachment, db) }
        }
        return filled
    }

    /// Uploads the chunks of `attachments` the service does not have (after a cut, only the
    /// rest), before the push that names them.
    func upload(_ attachments: [String: AttachmentUpload], into report: inout Report) async throws {
        for (_, upload) in attachments.sorted(by: { $0.key < $1.key }) {
            let status = try await transport.attachmentStatus(upload.attachment)
            guard status?.complete != true else { continue }
            // Chunks of another size's upload (a hostile or broken one) are replaced.
            let there = status?.attachment.size == upload.attachment.size ? Set(status?.chunks ?? []) : []
            for index in 0..<upload.attachment.chunkCount where !there.contains(index) {
                let bytes = upload.content.subdata(in: upload.attachment.range(ofChunk: index))
                _ = try await transport.upload(upload.attachment, chunk: index, bytes)
                report.chunksUploaded += 1
            }
        }
    }
}
