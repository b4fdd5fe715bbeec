import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// Attachments: a blob column marked as one travels as its SHA-256 and size; its bytes go to
/// and from the service (PostgreSQL) in chunks, once per content, resumed after a cut; a
/// device fetches them in every sync or when asked, per subscription; the service refuses
/// pushes naming bytes it does not hold, bytes that do not match their hash, and inline blobs.
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncAttachmentTests {
    static let photos = Migration(version: 100, name: "photos", sql: """
        CREATE TABLE photo (id INTEGER PRIMARY KEY, package_id INTEGER REFERENCES package (id) ON DELETE CASCADE, caption TEXT, image BLOB);
        """)
    static let tables = DemoSchema.syncedTables + ["photo"]

    /// A space whose registered schema has `photo.image` as an attachment.
    static func space(_ files: TemporaryDatabase) throws -> SyncSpace {
        let store = try Store.inMemory(migrations: DemoSchema.migrations + [photos])
        let schema = try store.read { db in try SyncSchema(db, tables: tables, attachments: ["photo.image"]) }
        let url = files.url("schema.json")
        try JSONEncoder().encode(schema).write(to: url)
        return try SyncSpace(serviceArguments: ["--schema", url.path])
    }

    /// A device of the photo app: its own store and client.
    struct PhotoDevice {
        let files = TemporaryDatabase()
        let store: Store
        let client: SyncClient

        init(_ space: SyncSpace, server: URL? = nil, token: String? = nil, _ configure: (inout SyncConfiguration) -> Void = { _ in }) throws {
            store = try files.store(migrations: DemoSchema.migrations + [SyncAttachmentTests.photos])
            var configuration = SyncConfiguration(tables: SyncAttachmentTests.tables)
            configuration.attachments = ["photo.image"]
            configure(&configuration)
            client = try SyncClient(store: store, server: server ?? space.service.url, token: token ?? space.token, configuration: configuration)
        }

        @discardableResult
        func sql(_ sql: String, _ arguments: [SQLiteValue] = []) throws -> Int64 {
            try store.write { db in
                try db.execute(sql: sql, arguments: arguments)
                return db.lastInsertedRowID
            }
        }

        /// Chunks of attachments fetched and not complete yet.
        func chunksHere() throws -> Int64 {
            try store.read { db in
                if case .integer(let count)? = try db.fetchRows(sql: "SELECT count(*) FROM sluice_sync_chunk").first?[0] { count } else { -1 }
            }
        }

        /// caption → image (its hash's first 8 digits, or "-" for NULL), by caption.
        func images() throws -> [String] {
            try store.read { db in
                try db.fetchRows(sql: "SELECT caption, image FROM photo ORDER BY caption").map { row in
                    guard case .text(let caption) = row[0] else { return "?" }
                    if case .blob(let data) = row[1] { return "\(caption)=\(SyncAttachment.hash(of: data).prefix(8))" }
                    return "\(caption)=-"
                }
            }
        }
    }

    /// `count` bytes that differ from every other call's.
    static func bytes(_ count: Int, seed: UInt64) -> Data {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        return Data((0..<count).map { _ in
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        })
    }

    static func short(_ data: Data) -> String { String(SyncAttachment.hash(of: data).prefix(8)) }

    @Test func anAttachmentTravelsAsItsHashAndArrivesAsAChangeset() async throws {
        let files = TemporaryDatabase()
        let space = try Self.space(files)
        let a = try PhotoDevice(space)
        let b = try PhotoDevice(space)
        let image = Self.bytes(700_000, seed: 1)
        try a.sql("INSERT INTO photo (caption, image) VALUES ('dock', ?)", [.blob(image)])
        let sent = try await a.client.sync()
        #expect(sent.chunksUploaded == 3, "700,000 bytes are three chunks of 256 KiB")

        // The history and the folded row carry the hash and size only; the bytes are in chunks.
        let hash = SyncAttachment.hash(of: image)
        let history = try space.psql("SELECT changes FROM sluice_txn")
        #expect(history.contains(hash) && history.utf8.count < 2_000, "\(history.prefix(300))")
        #expect(try SyncRequests.storedRows(space, table: "photo").joined().contains("\"att\": {\"size\": 700000, \"sha256\": \"\(hash)\"}"))
        #expect(try space.psql("SELECT size, complete, (SELECT count(*) FROM sluice_attachment_chunk) FROM sluice_attachment")
            .trimmingCharacters(in: .whitespacesAndNewlines) == "700000|t|3")

        // B's live query: the row arrives (its image not here yet), then the image fills it in.
        let recorder = ChangeLog<Row>()
        let token = b.store.rows(in: "photo").observe(on: DispatchQueue(label: "test")) { recorder.append($0) }
        defer { token.invalidate() }
        try await recorder.waitForCount(1)
        let got = try await b.client.sync()
        #expect(got.chunksFetched == 3)
        try await recorder.waitForCount(3)
        guard case .update(let first, let deletions, let insertions, let modifications) = recorder.values[1],
              case .update(let second, let deletions2, let insertions2, let modifications2) = recorder.values[2] else {
            Issue.record("\(recorder.values)")
            return
        }
        #expect(deletions.isEmpty && insertions == [0] && modifications.isEmpty && first.first?["image"] == .null)
        #expect(deletions2.isEmpty && insertions2.isEmpty && modifications2 == [0] && second.first?["image"] == .blob(image))
        #expect(try b.images() == ["dock=\(Self.short(image))"])

        // The same bytes again are not uploaded again; a caption edit sends no bytes.
        try a.sql("INSERT INTO photo (caption, image) VALUES ('dock again', ?)", [.blob(image)])
        try a.sql("UPDATE photo SET caption = 'dock at noon' WHERE caption = 'dock'")
        let again = try await a.client.sync()
        #expect(again.pushed == 2 && again.chunksUploaded == 0)
        let fetched = try await b.client.sync()
        #expect(fetched.chunksFetched == 0, "B holds those bytes already")
        #expect(try b.images() == ["dock again=\(Self.short(image))", "dock at noon=\(Self.short(image))"])

        // B replaces an image: the new bytes go up, A gets them; B clears the other: NULL everywhere.
        let replacement = Self.bytes(10_000, seed: 2)
        try b.sql("UPDATE photo SET image = ? WHERE caption = 'dock at noon'", [.blob(replacement)])
        try b.sql("UPDATE photo SET image = NULL WHERE caption = 'dock again'")
        #expect(try await b.client.sync().chunksUploaded == 1)
        try await a.client.sync()
        #expect(try a.images() == ["dock again=-", "dock at noon=\(Self.short(replacement))"])
        #expect(try await a.client.pendingAttachments().isEmpty)

        // Compaction deletes the bytes nothing names any more (the first image: its rows moved
        // on, the transactions that named it are pruned); a new device starts from the snapshot.
        let output = try PostgresCluster.run(CommandRunner.executable(named: "sluice-sync").path,
                                             ["compact", "--postgres", space.postgres, "--space", "test", "--horizon-days", "0"])
        #expect(output.contains("1 attachment(s) deleted"), "\(output)")
        #expect(try space.psql("SELECT hash FROM sluice_attachment").trimmingCharacters(in: .whitespacesAndNewlines) == SyncAttachment.hash(of: replacement))
        let c = try PhotoDevice(space)
        let started = try await c.client.sync()
        #expect(started.rows == 2 && started.chunksFetched == 1)
        #expect(try c.images() == ["dock again=-", "dock at noon=\(Self.short(replacement))"])
    }

    @Test func lazyAttachmentsWaitUntilAskedAndKeepTheirHashWhenTheRowIsEdited() async throws {
        let files = TemporaryDatabase()
        let space = try Self.space(files)
        let a = try PhotoDevice(space)
        let lazy = try PhotoDevice(space) { $0.attachmentFetch = .lazy }
        let (one, two) = (Self.bytes(300_000, seed: 3), Self.bytes(1_000, seed: 4))
        try a.sql("INSERT INTO photo (caption, image) VALUES ('one', ?)", [.blob(one)])
        try a.sql("INSERT INTO photo (caption, image) VALUES ('two', ?)", [.blob(two)])
        try await a.client.sync()

        let report = try await lazy.client.sync()
        #expect(report.chunksFetched == 0)
        #expect(try lazy.images() == ["one=-", "two=-"])
        let pending = try await lazy.client.pendingAttachments()
        #expect(pending.map { "\($0.table).\($0.column) \($0.attachment.size)" }.sorted() == ["photo.image 1000", "photo.image 300000"])

        // Editing another column of a row whose image is not here keeps the image everywhere.
        try lazy.sql("UPDATE photo SET caption = 'two!' WHERE caption = 'two'")
        try await lazy.client.sync()
        try await a.client.sync()
        #expect(try a.images() == ["one=\(Self.short(one))", "two!=\(Self.short(two))"])

        // Asked for one row, that row's image comes; then the rest.
        guard let first = pending.first(where: { $0.attachment.size == 300_000 }) else { return }
        #expect(try await lazy.client.fetchAttachments(table: "photo", rowIDs: [first.rowID]) == 1)
        #expect(try lazy.images() == ["one=\(Self.short(one))", "two!=-"])
        #expect(try await lazy.client.fetchAttachments() == 1)
        #expect(try lazy.images() == ["one=\(Self.short(one))", "two!=\(Self.short(two))"])
        #expect(try await lazy.client.pendingAttachments().isEmpty)
        #expect(try await lazy.client.pendingChangeCount() == 0, "filling in fetched bytes is not an edit to push")
    }

    @Test func eagerOrLazyPerSubscription() async throws {
        let files = TemporaryDatabase()
        let space = try Self.space(files)
        let a = try PhotoDevice(space)
        let (kept, other) = (Self.bytes(2_000, seed: 5), Self.bytes(3_000, seed: 6))
        try a.sql("INSERT INTO photo (caption, image) VALUES ('kept', ?)", [.blob(kept)])
        try a.sql("INSERT INTO photo (caption, image) VALUES ('other', ?)", [.blob(other)])
        try await a.client.sync()

        // Lazy by default; its subscription's rows eagerly.
        let eager = try PhotoDevice(space) {
            $0.attachmentFetch = .lazy
            $0.subscriptions = [SyncSubscription(table: "photo", where: Column("caption") == "kept").fetchingAttachments(.eager)]
        }
        try await eager.client.sync()
        #expect(try eager.images() == ["kept=\(Self.short(kept))"])
        // Eager by default; its subscription's rows lazily.
        let lazy = try PhotoDevice(space) { $0.subscriptions = [SyncSubscription(table: "photo").fetchingAttachments(.lazy)] }
        try await lazy.client.sync()
        #expect(try lazy.images() == ["kept=-", "other=-"])
        #expect(try await lazy.client.pendingAttachments().count == 2)
    }

    @Test func cutUploadsAndDownloadsGoOnFromTheChunksAcross() async throws {
        let files = TemporaryDatabase()
        let space = try Self.space(files)
        let proxy = try DroppingProxy(upstream: space.service.url)
        let a = try PhotoDevice(space, server: proxy.url)
        let image = Self.bytes(5 * SyncAttachment.chunkSize + 1_000, seed: 7)
        try a.sql("INSERT INTO photo (caption, image) VALUES ('big', ?)", [.blob(image)])

        // The link drops in the middle of an upload (chunks go four at a time: those on other
        // connections finish): some chunks are on the service, incomplete; no push went.
        proxy.cutUpload(after: 2 * SyncAttachment.chunkSize + 100_000)
        await #expect(throws: SyncClientError.self) { try await a.client.sync() }
        #expect(proxy.dropped == 1)
        let across = Int(try space.psql("SELECT count(*) FROM sluice_attachment_chunk").trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        #expect((1...5).contains(across), "\(across) of 6 chunks across")
        #expect(try space.psql("SELECT complete FROM sluice_attachment").trimmingCharacters(in: .whitespacesAndNewlines) == "f")
        #expect(try space.head() == 0)
        let resumed = try await a.client.sync()
        #expect(resumed.chunksUploaded == 6 - across, "only the chunks not across")
        #expect(resumed.pushed == 1)

        // A download cut in the middle keeps the chunks that came.
        let b = try PhotoDevice(space, server: proxy.url)
        proxy.cutDownload(after: 2 * SyncAttachment.chunkSize + 100_000)
        await #expect(throws: SyncClientError.self) { try await b.client.sync() }
        #expect(try b.images() == ["big=-"], "the row is here; its image is not yet")
        let here = try b.chunksHere()
        #expect((1...5).contains(here), "\(here) of 6 chunks here")
        let fetched = try await b.client.sync()
        #expect(fetched.chunksFetched == 6 - Int(here))
        #expect(try b.images() == ["big=\(Self.short(image))"])
        #expect(try b.chunksHere() == 0)
    }

    @Test func theServiceRefusesWhatItDoesNotHoldOrWhatDoesNotMatch() async throws {
        let files = TemporaryDatabase()
        let space = try Self.space(files)
        let a = try PhotoDevice(space)
        try a.sql("INSERT INTO photo (caption) VALUES ('plain')")
        try await a.client.sync()
        let head = try space.head()
        let content = Self.bytes(1_000, seed: 8)
        let attachment = SyncAttachment(content: content)

        func push(_ value: SyncValue) async throws -> (Int, String) {
            let change = SyncChange(table: "photo", id: "hostile-1", op: .insert, values: ["caption": .text("x"), "image": value])
            let transaction = SyncTransaction(device: "hostile", local: 1, clock: HybridClock(rawValue: 1 << 20), changes: [change])
            return try await SyncRequests.push(PushRequest(device: "hostile", base: head, transactions: [transaction]), to: space, token: space.token)
        }
        // Named before its bytes are uploaded; inline bytes in an attachment column.
        let (missing, missingBody) = try await push(.attachment(attachment))
        #expect(missing == 409 && missingBody.contains("attachment_missing") && missingBody.contains(attachment.hash), "\(missingBody)")
        let (inline, inlineBody) = try await push(.blob(content))
        #expect(inline == 400 && inlineBody.contains("photo.image") && inlineBody.contains("attachment"), "\(inlineBody)")
        #expect(try space.head() == head, "nothing applied")

        // Bytes that do not match the hash they are sent under: refused, none kept.
        func put(_ hash: String, size: Int, index: Int, _ body: Data, token: String? = nil) async throws -> (Int, String) {
            var request = URLRequest(url: space.service.url.appendingPathComponent("v1/attachments/\(hash)/\(index)").appending(queryItems: [.init(name: "size", value: "\(size)")]))
            request.httpMethod = "PUT"
            request.httpBody = body
            request.setValue("Bearer \(token ?? space.token)", forHTTPHeaderField: "Authorization")
            let (data, response) = try await URLSession.shared.data(for: request)
            return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
        }
        let (wrong, wrongBody) = try await put(attachment.hash, size: 1_000, index: 0, Self.bytes(1_000, seed: 9))
        #expect(wrong == 422 && wrongBody.contains("hash_mismatch"), "\(wrongBody)")
        #expect(try space.psql("SELECT count(*) FROM sluice_attachment_chunk").trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        // A chunk of the wrong length, a chunk past the end, a name that is not a hash, too large.
        #expect(try await put(attachment.hash, size: 1_000, index: 0, content.prefix(10)).0 == 400)
        #expect(try await put(attachment.hash, size: 1_000, index: 1, content).0 == 400)
        #expect(try await put("not-a-hash", size: 1_000, index: 0, content).0 == 400)
        #expect(try await put(attachment.hash, size: 1 << 40, index: 0, content).0 == 413)
        // A viewer uploads nothing.
        let viewer = try await a.client.share(with: "vera@example.com", as: .viewer)
        #expect(try await put(attachment.hash, size: 1_000, index: 0, content, token: viewer).0 == 403)

        // The right bytes: complete, and then the push goes.
        let (right, rightBody) = try await put(attachment.hash, size: 1_000, index: 0, content)
        #expect(right == 200 && rightBody.contains("\"complete\":true"), "\(rightBody)")
        // Its hash with another size: no device could fill it (every eager sync would fail).
        for size in [999, 1_001, 0] as [Int64] {
            let (status, body) = try await push(.attachment(SyncAttachment(hash: attachment.hash, size: size)))
            #expect(status == 422 && body.contains("attachment_mismatch") && body.contains("\(size) bytes"), "\(size): \(status) \(body)")
        }
        #expect(try space.head() == head, "nothing applied")
        #expect(try await push(.attachment(attachment)).0 == 200)
        // Another space does not see this space's bytes.
        let elsewhere = try SyncServiceProcess.addToken(postgres: space.postgres, space: "elsewhere")
        var request = URLRequest(url: space.service.url.appendingPathComponent("v1/attachments/\(attachment.hash)/0"))
        request.setValue("Bearer \(elsewhere)", forHTTPHeaderField: "Authorization")
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 404)
        // And the device gets it.
        try await a.client.sync()
        #expect(try a.images() == ["plain=-", "x=\(Self.short(content))"])
    }

    @Test func bytesThatDoNotMatchTheirHashAreRefusedByTheDevice() async throws {
        let files = TemporaryDatabase()
        let space = try Self.space(files)
        let a = try PhotoDevice(space)
        let image = Self.bytes(SyncAttachment.chunkSize + 10, seed: 10)
        try a.sql("INSERT INTO photo (caption, image) VALUES ('harbour', ?)", [.blob(image)])
        try await a.client.sync()
        // The service's copy of the last chunk is damaged (same length, other bytes).
        _ = try space.psql("UPDATE sluice_attachment_chunk SET data = decode(repeat('00', 10), 'hex') WHERE idx = 1")
        let b = try PhotoDevice(space)
        await #expect(throws: SyncClientError.self) { try await b.client.sync() }
        #expect(try b.images() == ["harbour=-"], "the damaged bytes never reach the row")
        #expect(try b.chunksHere() == 0, "and are not kept")
        #expect(try await b.client.pendingAttachments().count == 1)
        // Repaired on the service: the next sync fetches the whole attachment again.
        let chunk = image.subdata(in: SyncAttachment(content: image).range(ofChunk: 1)).map { String(format: "%02x", $0) }.joined()
        _ = try space.psql("UPDATE sluice_attachment_chunk SET data = decode('\(chunk)', 'hex') WHERE idx = 1")
        #expect(try await b.client.sync().chunksFetched == 2)
        #expect(try b.images() == ["harbour=\(Self.short(image))"])
    }
}
