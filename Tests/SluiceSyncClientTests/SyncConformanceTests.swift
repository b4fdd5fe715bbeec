import SluiceSyncConformance
import Testing

/// The client's sync loop against the history service in memory (no PostgreSQL): the same
/// scenarios the Server package runs against the real service. (Async tests wait for a
/// thread of the cooperative pool, which the suite's long synchronous tests hold on a
/// 2-core machine: a minute's limit was exceeded in a clean-clone run, and view-model
/// tests took 289 s under ThreadSanitizer.)
@Suite(.timeLimit(.minutes(10))) struct SyncConformanceTests {
    @Test(arguments: SyncConformance.scenarios.map(\.name))
    func inMemory(_ name: String) async throws {
        let scenario = try #require(SyncConformance.scenarios.first { $0.name == name })
        try await scenario.run(try HistoryService(scenario.setup))
    }
}
