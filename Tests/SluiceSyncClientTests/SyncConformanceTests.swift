import SluiceSyncConformance
import Testing

/// The client's sync loop against the history service in memory (no PostgreSQL): the same
/// scenarios the Server package runs against the real service. (Async tests wait for a
/// thread of the cooperative pool, which the suite's long synchronous tests hold on a
/// 2-core machine: a minute's limit was exceeded in a clean-clone run, and view-model
/// tests took 289 s under ThreadSanitizer.)
@Suite(.timeLimit(.minutes(10))) struct SyncConformanceTests {
    @Test(arguments: SyncConformance.scenarios.map(\.name))
    func inMemory(_ scenario: String) async throws {
        let run = try #require(SyncConformance.scenarios.first { $0.name == scenario }?.run)
        try await run(try HistoryService())
    }

    @Test(arguments: SyncConformance.attachmentScenarios.map(\.name))
    func attachmentsInMemory(_ scenario: String) async throws {
        let run = try #require(SyncConformance.attachmentScenarios.first { $0.name == scenario }?.run)
        try await run(try HistoryService(schema: try SyncConformance.Photos.schema()))
    }

    @Test(arguments: SyncConformance.versionScenarios.map(\.name))
    func versionsInMemory(_ scenario: String) async throws {
        let run = try #require(SyncConformance.versionScenarios.first { $0.name == scenario }?.run)
        try await run(try HistoryService(versions: try SyncConformance.Versions.versions()))
    }
}
