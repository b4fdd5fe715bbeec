import Foundation
import SluiceTestSupport
import Testing

/// Test cases run at most as many at once as the cooperative pool has threads, so a case
/// never waits for a thread while its time limit runs (a two-minute limit expired under
/// ThreadSanitizer before the case had run at all).
@Suite(.timeLimit(.minutes(10))) struct TestParallelismTests {
    /// Cases running now. (Behind an NSLock: the Synchronization module's Mutex waits with
    /// futex calls ThreadSanitizer does not see, and it reported its guarded value as raced.)
    static let running = Locked(0)
    static let poolThreads = max(2, ProcessInfo.processInfo.activeProcessorCount)

    @Test func theWidthIsThePoolsThreadCount() {
        #expect(TestParallelism.width == Self.poolThreads)
    }

    /// Four times as many cases as may run at once, each suspended for a moment (without
    /// the limit all of them run at once: a suspended case holds no thread).
    @Test(arguments: 0..<8) func noMoreCasesRunAtOnceThanTheWidth(_ index: Int) async throws {
        let now = Self.running.withLock { running in
            running += 1
            return running
        }
        try await Task.sleep(for: .milliseconds(100))
        Self.running.withLock { $0 -= 1 }
        #expect(now <= Self.poolThreads, "case \(index) ran beside \(now - 1) others")
    }
}
