import Foundation
import SluiceSyncClient
import SluiceSyncConformance
import Testing

/// Deleting a parent row while another device edits its children, through two service
/// instances on one database: every copy ends with the children the parent's ON DELETE
/// action leaves, whichever device syncs first. (Through one service, and the shell's
/// delete and a sender set to NULL: SyncConformance's scenarios, on both services.)
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncDeleteRuleTests {
    /// A space served by two instances on one database: transports go to each in turn.
    final class TwoInstances: ConformanceService, @unchecked Sendable {
        // @unchecked Sendable: `made` is guarded by `lock`.
        let space: SyncSpace
        let second: SyncServiceProcess
        private let lock = NSLock()
        private var made = 0

        init(_ space: SyncSpace, _ second: SyncServiceProcess) {
            self.space = space
            self.second = second
        }

        func newToken() async throws -> String { try SyncServiceProcess.addToken(postgres: space.postgres, space: "test") }
        func head() async throws -> Int64 { try space.head() }
        func content() async throws -> [String] { try SyncContent.ofService(space.postgres) }
        func compact(horizonDays: Int) async throws -> Int64 { try space.compact(horizonDays: horizonDays) }
        func transport(token: String, schemaVersion: Int?) -> any SyncTransport {
            let first = lock.withLock {
                made += 1
                return made % 2 == 1
            }
            return HTTPSyncTransport(server: first ? space.service.url : second.url, token: token, schemaVersion: schemaVersion)
        }
    }

    @Test(arguments: [true, false])
    func aParentDeletedWhileAnotherDeviceReferencesItAgain(deleterFirst: Bool) async throws {
        let space = try SyncSpace()
        let second = try SyncServiceProcess(postgres: space.postgres)
        defer { second.stop() }
        try await SyncConformance.aParentDeletedWhileAnotherDeviceReferencesItAgain(TwoInstances(space, second), deleterFirst: deleterFirst)
    }
}
