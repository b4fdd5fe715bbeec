import SluiceSyncConformance
import Testing

/// The client's sync loop against the history service in memory (no PostgreSQL): the same
/// scenarios the Server package runs against the real service.
@Suite(.timeLimit(.minutes(1))) struct SyncConformanceTests {
    @Test(arguments: SyncConformance.scenarios.map(\.name))
    func inMemory(_ scenario: String) async throws {
        let run = try #require(SyncConformance.scenarios.first { $0.name == scenario }?.run)
        try await run(HistoryService())
    }
}
