import Foundation
#if canImport(Glibc)
import Glibc
#endif
import SluiceDemo
import SluiceSyncClient
import SluiceSyncProtocol
import Sluice

/// One attachment of 64 MB (8 MB with `--quick`) through a real `sluice-sync` and PostgreSQL:
/// device A's sync uploads its chunks (the service checks the hash once the last is in) and
/// pushes the row; device B's sync pulls the row and downloads the chunks.
enum SyncAttachmentBenchmark {
    static let photos = Migration(version: 100, name: "photos", sql: "CREATE TABLE photo (id INTEGER PRIMARY KEY, caption TEXT, image BLOB)")

    static func line(binary: String, postgres: String, quick: Bool) async throws -> String {
        let tables = DemoSchema.syncedTables + ["photo"]
        let schema = try await Store.inMemory(migrations: demoTables + [photos]).read { db in
            try SyncSchema(db, tables: tables, attachments: ["photo.image"])
        }
        let schemaPath = freshDatabasePath("attachment-schema") + ".json"
        defer { try? FileManager.default.removeItem(atPath: schemaPath) }
        try JSONEncoder().encode(schema).write(to: URL(fileURLWithPath: schemaPath))
        let token = try SyncBenchmark.Cluster.addToken(binary, postgres: postgres, space: "attachments")
        let (service, server) = try SyncBenchmark.startService(binary, postgres: postgres, extra: ["--schema", schemaPath])
        defer { kill(service, SIGKILL); var status: Int32 = 0; waitpid(service, &status, 0) }
        var configuration = SyncConfiguration(tables: tables)
        configuration.attachments = ["photo.image"]

        let megabytes = quick ? 8 : 64
        var generator = SystemRandomNumberGenerator()
        let content = Data((0..<(megabytes << 20) / 8).flatMap { _ in withUnsafeBytes(of: generator.next() as UInt64) { Array($0) } })
        let pathA = freshDatabasePath("attachment-a"), pathB = freshDatabasePath("attachment-b")
        defer { removeDatabase(at: pathA); removeDatabase(at: pathB) }
        let a = try Store(path: pathA)
        try a.migrate(demoTables + [photos])
        try await a.write { db in try db.execute(sql: "INSERT INTO photo (caption, image) VALUES ('big', ?)", arguments: [.blob(content)]) }
        let clientA = try SyncClient(store: a, server: server, token: token, configuration: configuration)
        let upload = try await SyncBenchmark.seconds { try await clientA.sync() }
        let b = try Store(path: pathB)
        try b.migrate(demoTables + [photos])
        let clientB = try SyncClient(store: b, server: server, token: token, configuration: configuration)
        let download = try await SyncBenchmark.seconds { try await clientB.sync() }
        let arrived = try await b.read { db in try db.fetchRows(sql: "SELECT image FROM photo").first?[0] }
        guard arrived == .blob(content) else { throw SyncBenchmark.Failure(description: "B's image is not A's after its sync") }
        let (up, down) = (Double(megabytes) / upload, Double(megabytes) / download)
        return "| **sync:** an attachment of \(megabytes) MB, A's sync uploading it in chunks of 256 KiB (the service checks its SHA-256) / B's sync downloading it | | "
            + "\(Harness.format(upload)) (\(Int(up)) MB/s) / \(Harness.format(download)) (\(Int(down)) MB/s) | | ≥ 20 MB/s each way | \(min(up, down) >= 20 ? "ok" : "MISSED") |"
    }
}
