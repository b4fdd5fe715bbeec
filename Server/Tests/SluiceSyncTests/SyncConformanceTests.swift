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
    }

    @Test(arguments: SyncConformance.scenarios.map(\.name))
    func realService(_ scenario: String) async throws {
        let run = try #require(SyncConformance.scenarios.first { $0.name == scenario }?.run)
        try await run(RealService(space: try SyncSpace()))
    }

    @Test(arguments: SyncConformance.attachmentScenarios.map(\.name))
    func attachmentsOnTheRealService(_ scenario: String) async throws {
        let run = try #require(SyncConformance.attachmentScenarios.first { $0.name == scenario }?.run)
        let files = TemporaryDatabase()
        try await run(RealService(space: try SyncAttachmentTests.space(files)))
    }

    @Test(arguments: SyncConformance.versionScenarios.map(\.name))
    func versionsOnTheRealService(_ scenario: String) async throws {
        let run = try #require(SyncConformance.versionScenarios.first { $0.name == scenario }?.run)
        let files = TemporaryDatabase()
        let url = files.url("versions.json")
        try JSONEncoder().encode(try SyncConformance.Versions.versions()).write(to: url)
        try await run(RealService(space: try SyncSpace(serviceArguments: ["--schema", url.path])))
    }
}
