import Foundation

/// Every `updates` stream of a client: each gets the latest snapshot first, then each new one.
final class SnapshotBroadcast: @unchecked Sendable {
    // @unchecked Sendable: guarded by `lock`.
    private let lock = NSLock()
    private var latest: SyncClient.Snapshot?
    private var continuations: [UUID: AsyncStream<SyncClient.Snapshot>.Continuation] = [:]
    private var finished = false

    func subscribe() -> AsyncStream<SyncClient.Snapshot> {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncClient.Snapshot.self, bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        let (latest, finished) = lock.withLock {
            if !self.finished { continuations[id] = continuation }
            return (self.latest, self.finished)
        }
        if let latest { continuation.yield(latest) }
        if finished { continuation.finish() }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            _ = self.lock.withLock { self.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    func yield(_ snapshot: SyncClient.Snapshot) {
        let targets = lock.withLock {
            latest = snapshot
            return Array(continuations.values)
        }
        for continuation in targets { continuation.yield(snapshot) }
    }

    func finish() {
        let targets = lock.withLock {
            finished = true
            defer { continuations = [:] }
            return Array(continuations.values)
        }
        for continuation in targets { continuation.finish() }
    }
}
