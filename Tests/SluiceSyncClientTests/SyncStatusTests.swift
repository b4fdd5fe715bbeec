import Foundation
import Observation
import SluiceDemo
import SluiceSyncClient
import SluiceSyncConformance
import SluiceSyncProtocol
import SluiceTestSupport
import Testing

/// `SyncStatus`, the client's state as an `@Observable` for views: every observer sees a
/// sync's outcome; a device whose service cannot be reached is offline, its changes pending.
@Suite(.timeLimit(.minutes(2))) struct SyncStatusTests {
    /// A service that cannot be reached.
    struct Unreachable: SyncTransport {
        static let down = SyncClientError.offline("the service cannot be reached")
        func push(_ push: PushRequest) async throws -> SyncPushOutcome { throw Self.down }
        func pull(since: Int64, limit: Int?, device: String?) async throws -> PullResponse { throw Self.down }
        func rows(_ rows: RowsRequest) async throws -> RowsResponse { throw Self.down }
        func share(_ share: ShareRequest) async throws -> ShareResponse { throw Self.down }
        func wait(since: Int64, timeout: Int) async throws -> Int64 { throw Self.down }
        func attachmentStatus(_ attachment: SyncAttachment) async throws -> AttachmentStatus? { throw Self.down }
        func upload(_ attachment: SyncAttachment, chunk index: Int, _ bytes: Data) async throws -> AttachmentStatus { throw Self.down }
        func download(_ attachment: SyncAttachment, chunk index: Int) async throws -> Data { throw Self.down }
        func updateBearer(_ token: String) {}
    }

    /// Polls `condition` on the main actor for up to 20 s.
    @MainActor func poll(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(condition(), "the condition did not hold within 20 s")
    }

    @MainActor @Test func syncStatusIsObservable() async throws {
        let service = try HistoryService()
        let a = try SyncConformance.Device(service, token: service.newToken())
        let status = SyncStatus(a.client)
        let other = SyncStatus(a.client)   // a second observer sees the same changes
        try a.sql("INSERT INTO person (first_name, last_name) VALUES ('A', 'B')")
        let changed = Locked(false)
        withObservationTracking { _ = (status.status, status.pendingChangeCount, status.lastSync) } onChange: { changed.withLock { $0 = true } }
        try await a.client.sync()
        try await poll { status.lastSync != nil && other.lastSync != nil }
        #expect(changed.withLock { $0 })
        #expect(status.status == .idle && status.pendingChangeCount == 0 && status.cursor == 1)
        #expect(other.cursor == 1)

        // A device whose service is down: offline, its change pending.
        let files = TemporaryDatabase()
        let store = try files.store(migrations: DemoSchema.migrations)
        let offline = try SyncClient(store: store, transport: Unreachable(), configuration: SyncConfiguration(tables: DemoSchema.syncedTables))
        let offlineStatus = SyncStatus(offline)
        try await store.write { db in try db.execute(sql: "INSERT INTO person (first_name, last_name) VALUES ('C', 'D')") }
        await #expect(throws: SyncClientError.self) { try await offline.sync() }
        try await poll { if case .offline = offlineStatus.status { true } else { false } }
        #expect(offlineStatus.pendingChangeCount == 1)
    }
}
