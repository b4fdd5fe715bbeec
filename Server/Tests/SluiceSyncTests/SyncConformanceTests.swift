import Foundation
import SluiceSyncClient
import SluiceSyncConformance
import SluiceTestSupport
import Testing

/// The sync loop's scenarios against the real service over HTTP and PostgreSQL: the same
/// ones the root package runs against the history service in memory (SluiceSyncClientTests),
/// so that service behaves as this one does where the client's tests rely on it.
@Suite(.timeLimit(.minutes(10)), .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncConformanceTests {
    /// A space of the real service: tokens added with `sluice-sync token add`, the head read
    /// from PostgreSQL.
    struct RealService: ConformanceService {
        let space: SyncSpace

        func newToken() async throws -> String { try SyncServiceProcess.addToken(postgres: space.postgres, space: "test") }
        func transport(token: String, schemaVersion: Int?) -> any SyncTransport {
            HTTPSyncTransport(server: space.service.url, token: token, schemaVersion: schemaVersion)
        }
        func head() async throws -> Int64 { try space.head() }
        func content() async throws -> [String] { try SyncContent.ofService(space.postgres) }
        func compact(horizonDays: Int) async throws -> Int64 { try space.compact(horizonDays: horizonDays) }
    }

    /// A space of a service set up as `setup` says.
    static func space(_ setup: SyncConformance.Setup, _ files: TemporaryDatabase) throws -> SyncSpace {
        switch setup {
        case .demo: return try SyncSpace()
        case .photos: return try SyncAttachmentTests.space(files)
        case .versions:
            let url = files.url("versions.json")
            try JSONEncoder().encode(try SyncConformance.Versions.versions()).write(to: url)
            return try SyncSpace(serviceArguments: ["--schema", url.path])
        case .withoutStatements:
            let url = files.url("schema.json")
            try JSONEncoder().encode(try SyncConformance.schemaWithoutStatements()).write(to: url)
            return try SyncSpace(serviceArguments: ["--schema", url.path])
        case .limits(let transactions, let bytes):
            return try SyncSpace(serviceArguments: ["--max-push-transactions", "\(transactions)", "--max-body-bytes", "\(bytes)"])
        }
    }

    @Test(arguments: SyncConformance.scenarios.map(\.name))
    func realService(_ name: String) async throws {
        let scenario = try #require(SyncConformance.scenarios.first { $0.name == name })
        let files = TemporaryDatabase()
        try await scenario.run(RealService(space: try Self.space(scenario.setup, files)))
    }
}
