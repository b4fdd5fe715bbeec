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

/// Members from the command line: `sluice-sync share` makes a member's token, `member
/// remove` ends it, an unknown role is refused. (What roles allow, a viewer's refused pushes
/// and an editor's tables, are conformance scenarios run on this service and the in-memory
/// one.)
@Suite(.timeLimit(.minutes(10)), .serialized, .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncRoleTests {
    @Test func theCLISharesAndRemovesMembers() async throws {
        let space = try SyncSpace()
        let tool = CommandRunner.executable(named: "sluice-sync").path
        let output = try PostgresCluster.run(tool, ["share", "--postgres", space.postgres, "--space", "test", "--user", "cli", "--role", "viewer"])
        let token = try #require(output.split(separator: "\n").last.map(String.init))
        #expect(token.hasPrefix("slt_"), "\(output)")
        #expect(try await SyncProtectionTests.get(space, token: token).0 == 200, "the member's token opens the space")
        _ = try PostgresCluster.run(tool, ["member", "remove", "--postgres", space.postgres, "--space", "test", "--user", "cli"])
        try await Task.sleep(for: .milliseconds(2_100))   // past the instance's memory of tokens
        #expect(try await SyncProtectionTests.get(space, token: token).0 == 401, "a removed member's token opens nothing")
        let bad = Process()
        bad.executableURL = URL(fileURLWithPath: tool)
        bad.arguments = ["share", "--postgres", space.postgres, "--space", "test", "--user", "x", "--role", "boss"]
        bad.standardError = FileHandle.nullDevice
        bad.standardOutput = FileHandle.nullDevice
        try bad.run()
        bad.waitUntilExit()
        #expect(bad.terminationStatus != 0, "an unknown role is refused")
    }
}
