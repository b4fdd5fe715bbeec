import Foundation
import SluiceSyncProtocol
import Sluice

extension SyncClient {
    // MARK: - Attachments

    /// The attachments rows here point at whose bytes are not here yet (their columns are
    /// NULL): pulled with `AttachmentFetch.lazy`, or not fetched yet.
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
            let transport = transport
            var missing = false
            for window in Self.windows((0..<attachment.chunkCount).filter { !here.contains($0) }) {
                let results = await Self.concurrently(window) { index in try await transport.download(attachment, chunk: index) }
                // The chunks that came are kept, in one transaction per window: a cut download
                // goes on from them.
                let arrived = results.compactMap { index, result in (try? result.get()).map { (index, $0) } }
                try await store.write { db in for (index, bytes) in arrived { try engine.saveChunk(attachment, index: index, bytes, db) } }
                report.chunksFetched += arrived.count
                if let failure = results.lazy.compactMap({ _, result -> (any Error)? in if case .failure(let error) = result { error } else { nil } }).first {
                    // Not on the service (its upload is not over, or it was deleted): it stays
                    // to fetch, and the others come.
                    guard case SyncClientError.rejected(404, _) = failure else { throw failure }
                    missing = true
                    break
                }
            }
            if missing { continue }
            guard let count = try await store.write({ db in try engine.fill(attachment, db) }) else {
                throw SyncClientError.protocolViolation("attachment \(attachment.hash): the bytes the service sent do not match their hash; "
                                                        + "they were dropped and are fetched again next time")
            }
            filled += count
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
            let transport = transport
            for window in Self.windows((0..<upload.attachment.chunkCount).filter { !there.contains($0) }) {
                let results = await Self.concurrently(window) { index in
                    try await transport.upload(upload.attachment, chunk: index, upload.content.subdata(in: upload.attachment.range(ofChunk: index)))
                }
                for (_, result) in results {
                    _ = try result.get()
                    report.chunksUploaded += 1
                }
            }
        }
    }

    /// Chunks in flight at once, each way.
    static let chunksInFlight = 4

    /// `indexes` in groups of ``chunksInFlight``.
    static func windows(_ indexes: [Int]) -> [[Int]] {
        stride(from: 0, to: indexes.count, by: chunksInFlight).map { Array(indexes[$0..<min($0 + chunksInFlight, indexes.count)]) }
    }

    /// Runs `body` for each of `indexes` at once; every outcome, in `indexes`' order.
    static func concurrently<T: Sendable>(_ indexes: [Int], _ body: @escaping @Sendable (Int) async throws -> T) async -> [(Int, Result<T, any Error>)] {
        await withTaskGroup(of: (Int, Result<T, any Error>).self) { group in
            for index in indexes {
                group.addTask {
                    do { return (index, .success(try await body(index))) } catch { return (index, .failure(error)) }
                }
            }
            var results: [(Int, Result<T, any Error>)] = []
            for await result in group { results.append(result) }
            return results.sorted { $0.0 < $1.0 }
        }
    }
}
