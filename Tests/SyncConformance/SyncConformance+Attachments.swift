import Foundation
import Sluice
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol

/// Attachments on any service: a blob column marked as one travels as its SHA-256 and size;
/// its bytes go up and down in chunks, once per content, and a cut transfer goes on from
/// the chunks across; a device fetches them in every sync or when asked, per subscription;
/// the service refuses pushes naming bytes it does not hold (or with another size) and
/// uploads that are not what they name; a device refuses bytes that do not match their hash.
/// These run on a service of the photo app (``Photos``).
extension SyncConformance {
    /// The demo app with photos: `photo.image` is an attachment.
    public enum Photos {
        public static let migration = Migration(version: 100, name: "photos", sql: """
            CREATE TABLE photo (id INTEGER PRIMARY KEY, package_id INTEGER REFERENCES package (id) ON DELETE CASCADE, caption TEXT, image BLOB);
            """)
        public static let tables = DemoSchema.syncedTables + ["photo"]
        public static let attachments = ["photo.image"]

        /// The schema a service of the photo app registers.
        public static func schema() throws -> SyncSchema {
            try Store.inMemory(migrations: DemoSchema.migrations + [migration]).read { db in
                try SyncSchema(db, tables: tables, attachments: attachments)
            }
        }
    }

    /// The scenarios that need a service of ``Photos``' schema, by name.
    static let attachmentScenarios: [(name: String, run: Scenario)] = [
        ("an attachment travels as its hash, once per content, arrives as a changeset, and goes when compaction finds nothing naming it", anAttachmentTravelsAsItsHash),
        ("lazy attachments wait until asked and keep their hash when the row is edited", lazyAttachmentsWaitUntilAsked),
        ("attachments are fetched eagerly or lazily per subscription", eagerOrLazyPerSubscription),
        ("a cut upload or download goes on from the chunks across", cutTransfersGoOn),
        ("the service refuses pushes naming bytes it does not hold or with another size, and uploads that are not what they name", theServiceRefusesWhatItDoesNotHold),
        ("bytes that do not match their hash are refused by the device, kept nowhere, and fetched again", damagedBytesAreRefusedByTheDevice),
    ] + acceptedPushSeeds.map { seed in
        ("every push the service accepts of a hostile client's applies on a fresh device (seed \(seed))", { service in
            try await everyAcceptedPushAppliesOnAFreshDevice(service, seed: seed)
        })
    }

    static func photoDevice(_ service: any ConformanceService, _ configure: (inout SyncConfiguration) -> Void = { _ in }) async throws -> Device {
        try Device(service, token: try await service.newToken(), migrations: DemoSchema.migrations + [Photos.migration], tables: Photos.tables) {
            $0.attachments = Photos.attachments
            configure(&$0)
        }
    }

    /// `count` bytes that differ from every other seed's.
    static func bytes(_ count: Int, seed: UInt64) -> Data {
        var random = SeededRandom(state: seed &* 0x9E37_79B9_7F4A_7C15 | 1)
        return Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &random) })
    }

    static func short(_ data: Data) -> String { String(SyncAttachment.hash(of: data).prefix(8)) }

    /// caption=image (its hash's first 8 digits, or "-" for NULL), by caption.
    static func images(_ device: Device) throws -> [String] {
        try device.store.read { db in
            try db.fetchRows(sql: "SELECT caption, image FROM photo ORDER BY caption").map { row in
                guard case .text(let caption) = row[0] else { return "?" }
                if case .blob(let data) = row[1] { return "\(caption)=\(SyncAttachment.hash(of: data).prefix(8))" }
                return "\(caption)=-"
            }
        }
    }

    /// Chunks of attachments fetched to `device` and not complete yet.
    static func chunksHere(_ device: Device) throws -> Int64 {
        try device.store.read { db in
            if case .integer(let count)? = try db.fetchRows(sql: "SELECT count(*) FROM sluice_sync_chunk").first?[0] { count } else { -1 }
        }
    }

    static func anAttachmentTravelsAsItsHash(_ service: any ConformanceService) async throws {
        let (a, b) = (try await photoDevice(service), try await photoDevice(service))
        let image = bytes(700_000, seed: 1)
        try a.sql("INSERT INTO photo (caption, image) VALUES ('dock', ?)", [.blob(image)])
        let sent = try await a.client.sync()
        try expect(sent.chunksUploaded == 3, "\(sent.chunksUploaded) chunks uploaded: 700,000 bytes are three chunks of 256 KiB")

        // The history carries the hash and size only; the service holds the bytes complete.
        let attachment = SyncAttachment(content: image)
        let history = try await service.transport(token: try await service.newToken()).pull(since: 0, limit: nil, device: nil)
        let values = history.transactions.flatMap(\.changes).compactMap { $0.values?["image"] }
        try expect(values == [.attachment(attachment)], "the history's image values are \(values), not the attachment")
        let status = try await a.transport.attachmentStatus(attachment)
        try expect(status == AttachmentStatus(attachment: attachment, complete: true, chunks: [0, 1, 2]), "the service holds \(String(describing: status))")

        // B's live query: the row arrives (its image not here yet), then the image fills it in.
        let changesets = Changesets(b.store.rows(in: "photo"), of: b.store)
        _ = changesets.take()
        let got = try await b.client.sync()
        try expect(got.chunksFetched == 3, "b fetched \(got.chunksFetched) chunks, not 3")
        let arrived = changesets.take()
        guard arrived.count == 2, case .update(let first, let deletions, let insertions, let modifications) = arrived[0],
              case .update(let second, let deletions2, let insertions2, let modifications2) = arrived[1] else {
            throw ConformanceFailure("b's live query saw \(arrived), not the row and then its image")
        }
        try expect(deletions.isEmpty && insertions == [0] && modifications.isEmpty && first.first?["image"] == .null,
                   "the row arrives with its image not here: \(arrived[0])")
        try expect(deletions2.isEmpty && insertions2.isEmpty && modifications2 == [0] && second.first?["image"] == .blob(image),
                   "then the image fills it in: \(arrived[1])")

        // The same bytes again are not uploaded again; a caption edit sends no bytes.
        try a.sql("INSERT INTO photo (caption, image) VALUES ('dock again', ?)", [.blob(image)])
        try a.sql("UPDATE photo SET caption = 'dock at noon' WHERE caption = 'dock'")
        let again = try await a.client.sync()
        try expect(again.pushed == 2 && again.chunksUploaded == 0, "pushed \(again.pushed), uploaded \(again.chunksUploaded) chunks")
        let fetched = try await b.client.sync()
        try expect(fetched.chunksFetched == 0, "b fetched \(fetched.chunksFetched) chunks of bytes it holds")
        try expect(try images(b) == ["dock again=\(short(image))", "dock at noon=\(short(image))"], "b holds \(try images(b))")

        // B replaces an image: the new bytes go up, A gets them; B clears the other: NULL everywhere.
        let replacement = bytes(10_000, seed: 2)
        try b.sql("UPDATE photo SET image = ? WHERE caption = 'dock at noon'", [.blob(replacement)])
        try b.sql("UPDATE photo SET image = NULL WHERE caption = 'dock again'")
        let replaced = try await b.client.sync()
        try expect(replaced.chunksUploaded == 1, "b uploaded \(replaced.chunksUploaded) chunks")
        try await a.client.sync()
        try expect(try images(a) == ["dock again=-", "dock at noon=\(short(replacement))"], "a holds \(try images(a))")
        try expect(try await a.client.pendingAttachments().isEmpty, "a waits for attachments")

        // Compaction deletes the bytes nothing names any more (the first image: its rows moved
        // on, the transactions that named it are pruned); a new device starts from the
        // snapshot and fetches the bytes its rows name.
        _ = try await service.compact(horizonDays: 0)
        let (gone, kept) = (try await a.transport.attachmentStatus(attachment), try await a.transport.attachmentStatus(SyncAttachment(content: replacement)))
        try expect(gone == nil && kept?.complete == true, "after compaction the first image is \(String(describing: gone)), the second \(String(describing: kept))")
        let c = try await photoDevice(service)
        let started = try await c.client.sync()
        try expect(started.chunksFetched == 1, "c fetched \(started.chunksFetched) chunks")
        try expect(try images(c) == ["dock again=-", "dock at noon=\(short(replacement))"], "c holds \(try images(c))")
    }

    static func lazyAttachmentsWaitUntilAsked(_ service: any ConformanceService) async throws {
        let a = try await photoDevice(service)
        let lazy = try await photoDevice(service) { $0.attachmentFetch = .lazy }
        let (one, two) = (bytes(300_000, seed: 3), bytes(1_000, seed: 4))
        try a.sql("INSERT INTO photo (caption, image) VALUES ('one', ?)", [.blob(one)])
        try a.sql("INSERT INTO photo (caption, image) VALUES ('two', ?)", [.blob(two)])
        try await a.client.sync()

        let report = try await lazy.client.sync()
        try expect(report.chunksFetched == 0 && (try images(lazy)) == ["one=-", "two=-"], "a lazy device fetched \(report.chunksFetched) chunks: \(try images(lazy))")
        let pending = try await lazy.client.pendingAttachments()
        let named = pending.map { "\($0.table).\($0.column) \($0.attachment.size)" }.sorted()
        try expect(named == ["photo.image 1000", "photo.image 300000"], "pending: \(named)")

        // Editing another column of a row whose image is not here keeps the image everywhere.
        try lazy.sql("UPDATE photo SET caption = 'two!' WHERE caption = 'two'")
        try await lazy.client.sync()
        try await a.client.sync()
        try expect(try images(a) == ["one=\(short(one))", "two!=\(short(two))"], "a holds \(try images(a))")

        // Asked for one row, that row's image comes; then the rest.
        guard let first = pending.first(where: { $0.attachment.size == 300_000 }) else { throw ConformanceFailure("no pending 300,000 bytes") }
        let fetchedOne = try await lazy.client.fetchAttachments(table: "photo", rowIDs: [first.rowID])
        try expect(fetchedOne == 1 && (try images(lazy)) == ["one=\(short(one))", "two!=-"], "asked for one: \(fetchedOne), \(try images(lazy))")
        let fetchedRest = try await lazy.client.fetchAttachments()
        try expect(fetchedRest == 1 && (try images(lazy)) == ["one=\(short(one))", "two!=\(short(two))"], "asked for the rest: \(fetchedRest), \(try images(lazy))")
        try expect(try await lazy.client.pendingAttachments().isEmpty, "still pending")
        try expect(try await lazy.client.pendingChangeCount() == 0, "filling in fetched bytes is not an edit to push")
    }

    static func eagerOrLazyPerSubscription(_ service: any ConformanceService) async throws {
        let a = try await photoDevice(service)
        let (kept, other) = (bytes(2_000, seed: 5), bytes(3_000, seed: 6))
        try a.sql("INSERT INTO photo (caption, image) VALUES ('kept', ?)", [.blob(kept)])
        try a.sql("INSERT INTO photo (caption, image) VALUES ('other', ?)", [.blob(other)])
        try await a.client.sync()

        // Lazy by default; its subscription's rows eagerly.
        let eager = try await photoDevice(service) {
            $0.attachmentFetch = .lazy
            $0.subscriptions = [SyncSubscription(table: "photo", where: Column("caption") == "kept").fetchingAttachments(.eager)]
        }
        try await eager.client.sync()
        try expect(try images(eager) == ["kept=\(short(kept))"], "an eager subscription holds \(try images(eager))")
        // Eager by default; its subscription's rows lazily.
        let lazy = try await photoDevice(service) { $0.subscriptions = [SyncSubscription(table: "photo").fetchingAttachments(.lazy)] }
        try await lazy.client.sync()
        try expect(try images(lazy) == ["kept=-", "other=-"], "a lazy subscription holds \(try images(lazy))")
        try expect(try await lazy.client.pendingAttachments().count == 2, "a lazy subscription's two images are not pending")
    }

    static func cutTransfersGoOn(_ service: any ConformanceService) async throws {
        let a = try await photoDevice(service)
        let image = bytes(5 * SyncAttachment.chunkSize + 1_000, seed: 7)
        let attachment = SyncAttachment(content: image)
        try a.sql("INSERT INTO photo (caption, image) VALUES ('big', ?)", [.blob(image)])

        // The link is cut in the middle of an upload: two chunks are across, incomplete; no push went.
        a.transport.cutChunks(after: 2)
        let head = try await service.head()
        do {
            try await a.client.sync()
            throw ConformanceFailure("a sync whose upload was cut succeeded")
        } catch is SyncClientError {}
        a.transport.mend()
        let status = try await a.transport.attachmentStatus(attachment)
        try expect(status?.chunks.count == 2 && status?.complete == false, "the service holds \(String(describing: status)) of 6 chunks")
        try expect(try await service.head() == head, "a push went before its attachment was complete")
        let resumed = try await a.client.sync()
        try expect(resumed.chunksUploaded == 4 && resumed.pushed == 1, "resumed: \(resumed.chunksUploaded) chunks, \(resumed.pushed) pushed")

        // A download cut in the middle keeps the chunks that came.
        let b = try await photoDevice(service)
        b.transport.cutChunks(after: 3)
        do {
            try await b.client.sync()
            throw ConformanceFailure("a sync whose download was cut succeeded")
        } catch is SyncClientError {}
        b.transport.mend()
        try expect(try images(b) == ["big=-"], "the row is here and its image is not yet: \(try images(b))")
        try expect(try chunksHere(b) == 3, "\(try chunksHere(b)) of 6 chunks here, not the 3 that came")
        let fetched = try await b.client.sync()
        try expect(fetched.chunksFetched == 3 && (try images(b)) == ["big=\(short(image))"], "fetched \(fetched.chunksFetched): \(try images(b))")
        try expect(try chunksHere(b) == 0, "chunks of a complete attachment are still kept apart")
    }

    static func theServiceRefusesWhatItDoesNotHold(_ service: any ConformanceService) async throws {
        let a = try await photoDevice(service)
        try a.sql("INSERT INTO photo (caption) VALUES ('plain')")
        try await a.client.sync()
        let transport = service.transport(token: try await service.newToken())
        let head = try await service.head()
        let content = bytes(1_000, seed: 8)
        let attachment = SyncAttachment(content: content)

        /// The status and code the service answers a request with, and whether its message
        /// names the column (or "ok" when it takes it).
        func answer(_ request: () async throws -> Void) async throws -> String {
            do {
                try await request()
                return "ok"
            } catch SyncClientError.rejected(let status, let body) {
                return "\(status) \(body.code)\(body.message.contains("photo.image") ? " photo.image" : "")"
            }
        }
        func push(_ value: SyncValue) async throws -> String {
            let change = SyncChange(table: "photo", id: "hostile-1", op: .insert, values: ["caption": .text("x"), "image": value])
            let transaction = SyncTransaction(device: "hostile", local: 1, clock: HybridClock(rawValue: 1 << 20), changes: [change])
            return try await answer { _ = try await transport.push(PushRequest(device: "hostile", base: head, transactions: [transaction])) }
        }
        func put(_ attachment: SyncAttachment, _ index: Int, _ bytes: Data) async throws -> String {
            try await answer { _ = try await transport.upload(attachment, chunk: index, bytes) }
        }

        // Named before its bytes are uploaded; inline bytes in an attachment column.
        let refused = (try await push(.attachment(attachment)), try await push(.blob(content)))
        try expect(refused == ("409 attachment_missing photo.image", "400 invalid photo.image"), "pushes answered \(refused)")
        // Bytes that do not match the hash they are sent under: refused, none kept.
        let wrong = try await put(attachment, 0, bytes(1_000, seed: 9))
        try expect(wrong == "422 hash_mismatch", "other bytes under the hash: \(wrong)")
        let kept = try await transport.attachmentStatus(attachment)?.chunks ?? []
        try expect(kept.isEmpty, "chunks \(kept) of bytes that did not match were kept")
        // A chunk of the wrong length, a chunk past the end, a name that is not a hash, too large.
        let malformed = [try await put(attachment, 0, content.prefix(10)), try await put(attachment, 1, content),
                         try await put(SyncAttachment(hash: "not-a-hash", size: 1_000), 0, content),
                         try await put(SyncAttachment(hash: attachment.hash, size: 1 << 40), 0, content)]
        try expect(malformed == ["400 invalid", "400 invalid", "400 invalid", "413 too_large"], "malformed uploads answered \(malformed)")

        // The right bytes: complete, and then the push goes.
        let right = try await transport.upload(attachment, chunk: 0, content)
        try expect(right.complete, "the right bytes are not complete: \(right)")
        // Its hash with another size: no device could fill it (every eager sync would fail).
        for size in [999, 1_001, 0] as [Int64] {
            let other = try await push(.attachment(SyncAttachment(hash: attachment.hash, size: size)))
            try expect(other == "422 attachment_mismatch photo.image", "the hash with \(size) bytes: \(other)")
        }
        try expect(try await service.head() == head, "a refused push appended")
        let pushed = try await push(.attachment(attachment))
        try expect(pushed == "ok", "the push naming uploaded bytes: \(pushed)")
        try await a.client.sync()
        try expect(try images(a) == ["plain=-", "x=\(short(content))"], "a holds \(try images(a))")
    }

    static func damagedBytesAreRefusedByTheDevice(_ service: any ConformanceService) async throws {
        let a = try await photoDevice(service)
        let image = bytes(SyncAttachment.chunkSize + 10, seed: 10)
        try a.sql("INSERT INTO photo (caption, image) VALUES ('harbour', ?)", [.blob(image)])
        try await a.client.sync()
        // The last chunk arrives damaged (same length, other bytes).
        let b = try await photoDevice(service)
        b.transport.damageChunk(1)
        do {
            try await b.client.sync()
            throw ConformanceFailure("a sync fetching damaged bytes succeeded")
        } catch is SyncClientError {}
        try expect(try images(b) == ["harbour=-"], "the damaged bytes reached the row: \(try images(b))")
        try expect(try chunksHere(b) == 0, "damaged chunks were kept")
        try expect(try await b.client.pendingAttachments().count == 1, "the image is not pending")
        // Whole again: the next sync fetches the whole attachment again.
        b.transport.mend()
        let fetched = try await b.client.sync()
        try expect(fetched.chunksFetched == 2 && (try images(b)) == ["harbour=\(short(image))"], "fetched \(fetched.chunksFetched): \(try images(b))")
    }
}
