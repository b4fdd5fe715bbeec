import Foundation
import SluiceSyncProtocol

/// The pages of a round of rows, handed from the task that fetches them to the store's
/// writer, which applies each as it comes inside one local transaction (a round is fetched
/// and applied at once, not one after the other).
///
/// The writer blocks in ``next()`` (it runs on the store's writer queue, not on a task of
/// the shared pool); the fetching task ends the feed with the round's head or its error,
/// whatever happens to it (``finish(_:)``), so the writer is never left waiting.
final class RowsFeed: @unchecked Sendable {
    /// What ``next()`` hands the writer.
    enum Item {
        /// One page's changes.
        case page([SyncChange])
        /// The round is over: its head.
        case end(head: Int64)
    }

    // Guards `pages` and `ending`.
    private let condition = NSCondition()
    private var pages: [[SyncChange]] = []
    private var ending: Result<Int64, any Error>?

    /// Hands over one page.
    func put(_ changes: [SyncChange]) {
        condition.lock()
        defer { condition.unlock() }
        pages.append(changes)
        condition.signal()
    }

    /// Ends the feed with the round's head, or the error that ended its fetching (the first
    /// call counts).
    func finish(_ result: Result<Int64, any Error>) {
        condition.lock()
        defer { condition.unlock() }
        if ending == nil { ending = result }
        condition.signal()
    }

    /// The next page, or the end, waiting for it.
    ///
    /// - Throws: the error that ended the fetching, once the pages before it are taken.
    func next() throws -> Item {
        condition.lock()
        defer { condition.unlock() }
        while pages.isEmpty && ending == nil { condition.wait() }
        if !pages.isEmpty { return .page(pages.removeFirst()) }
        switch ending {
        case .success(let head): return .end(head: head)
        case .failure(let error): throw error
        case nil: throw CancellationError()
        }
    }
}

/// Runs the jobs of the task that fills a ``RowsFeed`` on a queue of its own rather than on
/// the shared pool: the store's writer waits for that task, and tasks waiting for the writer
/// (an app's blocking `write` called from a task) may hold every thread of the pool.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
final class RowsFetchExecutor: TaskExecutor {
    static let shared = RowsFetchExecutor()
    private let queue = DispatchQueue(label: "sluice.sync.rows-fetch")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
