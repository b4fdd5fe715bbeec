import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SluiceDemo
import SluiceSyncClient
import SluiceSyncConformance
import SluiceSyncProtocol
import SluiceTestSupport
import Sluice
import Testing

/// Attachments in PostgreSQL and over a real network: the history and the folded rows hold
/// the hash and size, the bytes in chunks; compaction deletes the bytes nothing names; an
/// upload or download cut by the network goes on; viewers upload nothing and spaces share
/// no bytes. The client's handling of attachments, and the service's refusals, are
/// conformance scenarios (`SyncConformance.scenarios` set up `.photos`) run on both services.
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncAttachmentTests {
    static let tables = SyncConformance.Photos.tables

    /// A space whose registered schema has `photo.image` as an attachment.
    static func space(_ files: TemporaryDatabase) throws -> SyncSpace {
        let schema = try SyncConformance.Photos.schema()
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
            store = try files.store(migrations: DemoSchema.migrations + [SyncConformance.Photos.migration])
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

    @Test func theServiceHoldsHashesInItsHistoryAndCompactionDeletesBytesNothingNames() async throws {
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

        // B gets the row and then its bytes (the changesets: the conformance scenarios).
        #expect(try await b.client.sync().chunksFetched == 3)
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

    /// What the service refuses of a push or an upload is a conformance scenario (both
    /// services); what needs members and spaces is here.
    @Test func viewersUploadNothingAndSpacesShareNoBytes() async throws {
        let files = TemporaryDatabase()
        let space = try Self.space(files)
        let a = try PhotoDevice(space)
        let content = Self.bytes(1_000, seed: 8)
        let attachment = SyncAttachment(content: content)
        func put(token: String) async throws -> Int {
            var request = URLRequest(url: space.service.url.appendingPathComponent("v1/attachments/\(attachment.hash)/0").appending(queryItems: [.init(name: "size", value: "1000")]))
            request.httpMethod = "PUT"
            request.httpBody = content
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            let (_, response) = try await URLSession.shared.data(for: request)
            return (response as? HTTPURLResponse)?.statusCode ?? 0
        }
        let viewer = try await a.client.share(with: "vera@example.com", as: .viewer)
        #expect(try await put(token: viewer) == 403)
        #expect(try await put(token: space.token) == 200)
        // Another space does not see this space's bytes.
        let elsewhere = try SyncServiceProcess.addToken(postgres: space.postgres, space: "elsewhere")
        var request = URLRequest(url: space.service.url.appendingPathComponent("v1/attachments/\(attachment.hash)/0"))
        request.setValue("Bearer \(elsewhere)", forHTTPHeaderField: "Authorization")
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 404)
    }

}
