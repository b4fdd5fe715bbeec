import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SluiceSyncProtocol
import SluiceTestSupport
import Testing

/// The memory of request bodies in flight stays within a budget: with the default limits
/// (64 MB bodies), three pushes of 60 MB at once leave the service under twice the body
/// limit plus 150 MB resident; those past the budget get 503 with Retry-After.
@Suite(.serialized, .timeLimit(.minutes(3)), .enabled(if: PostgresCluster.skipReason == nil, "SLUICE_NO_POSTGRES=1: the sync tests need PostgreSQL"))
struct SyncMemoryTests {
    /// The service process's peak resident memory (VmHWM), in bytes.
    static func peakResident(_ pid: Int32) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
    }

    /// A push of about `bytes` bytes: many people, and a last change to a table that does
    /// not exist, so that it is read and decoded whole and then refused (nothing stored).
    static func body(bytes: Int, device: String) throws -> Data {
        let note = String(repeating: "x", count: 1_000)
        let count = bytes / 1_100
        var changes = (0..<count).map { index in
            SyncChange(table: "person", id: "\(device)-\(index)", op: .insert, values: ["first_name": .text(note), "last_name": .text("L")])
        }
        changes.append(SyncChange(table: "nowhere", id: "x", op: .insert, values: [:]))
        let push = PushRequest(device: device, base: 0, transactions: [SyncTransaction(device: device, local: 1, clock: HybridClock(date: Date()), changes: changes)])
        return try JSONEncoder().encode(push)
    }

    @Test func threeBigPushesAtOnceStayWithinTheBudget() async throws {
        let space = try SyncSpace()
        let pid = space.service.process.processIdentifier
        let bodies = try (0..<3).map { try Self.body(bytes: 60_000_000, device: "big-\($0)") }
        #expect(bodies.allSatisfy { $0.count > 55_000_000 && $0.count < 64 << 20 })
        let answers = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
            for body in bodies {
                group.addTask {
                    var request = URLRequest(url: space.service.url.appendingPathComponent("v1/push"))
                    request.httpMethod = "POST"
                    request.httpBody = body
                    request.timeoutInterval = 120
                    request.setValue("Bearer \(space.token)", forHTTPHeaderField: "Authorization")
                    let (_, response) = try await URLSession.shared.data(for: request)
                    let http = response as? HTTPURLResponse
                    return (http?.statusCode ?? 0, http?.value(forHTTPHeaderField: "Retry-After"))
                }
            }
            var answers: [(Int, String?)] = []
            for try await answer in group { answers.append(answer) }
            return answers
        }
        let peak = Self.peakResident(pid)
        let budget = 2 * (64 << 20) + 150 << 20
        #expect(peak > 0 && peak <= budget, "the service peaked at \(peak >> 20) MB resident (at most \(budget >> 20) MB): \(answers)")
        #expect(answers.allSatisfy { $0.0 == 400 || ($0.0 == 503 && $0.1 == "1") }, "refused as invalid, or 503 with Retry-After: \(answers)")
        #expect(answers.contains { $0.0 == 400 }, "one at least was read whole: \(answers)")
        print("three 60 MB pushes at once: the service peaked at \(peak >> 20) MB resident; answers \(answers.map(\.0))")
    }
}
