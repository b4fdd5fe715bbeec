import Foundation
import SluiceSyncClient
import SluiceSyncProtocol

/// A sync service the conformance scenarios run against: the real one over HTTP (the
/// Server package's tests), or ``HistoryService`` in memory (the root package's).
public protocol ConformanceService: Sendable {
    /// A new credential for the scenarios' space (two tokens are two users or devices).
    func newToken() async throws -> String
    /// A transport that sends requests with `token`.
    func transport(token: String) -> any SyncTransport
    /// The head of the space's history.
    func head() async throws -> Int64
    /// The space's current rows as ``SyncContent`` renders them.
    func content() async throws -> [String]
}

/// A transport that fails the next push on demand, around any other: before it reaches
/// the service, or after the service stored it (its answer lost). Every call is recorded.
public final class FaultyTransport: SyncTransport, @unchecked Sendable {
    // @unchecked Sendable: `fault` and `log` are guarded by `lock`.
    public enum Fault: Sendable {
        /// The push does not reach the service.
        case beforeStoring
        /// The service stores it and the answer is lost.
        case afterStoring
    }

    let base: any SyncTransport
    private let lock = NSLock()
    private var fault: Fault?
    private var log: [String] = []

    public init(_ base: any SyncTransport) { self.base = base }

    /// Makes the next push fail as `fault` says.
    public func failNextPush(_ fault: Fault) { lock.withLock { self.fault = fault } }

    /// The calls so far: `push DEVICE base N locals [...]`, `pull since N`.
    public var calls: [String] { lock.withLock { log } }

    public func push(_ push: PushRequest) async throws -> SyncPushOutcome {
        let fault = lock.withLock { () -> Fault? in
            log.append("push \(push.device) base \(push.base) locals \(push.transactions.map(\.local))")
            defer { self.fault = nil }
            return self.fault
        }
        if fault == .beforeStoring { throw SyncClientError.offline("the push did not reach the service") }
        let outcome = try await base.push(push)
        if fault == .afterStoring { throw SyncClientError.offline("the service's answer was lost") }
        return outcome
    }

    public func pull(since: Int64, limit: Int?, device: String?) async throws -> PullResponse {
        lock.withLock { log.append("pull since \(since)") }
        return try await base.pull(since: since, limit: limit, device: device)
    }

    public func rows(_ rows: RowsRequest) async throws -> RowsResponse { try await base.rows(rows) }
    public func share(_ share: ShareRequest) async throws -> ShareResponse { try await base.share(share) }
    public func wait(since: Int64, timeout: Int) async throws -> Int64 { try await base.wait(since: since, timeout: timeout) }
    public func attachmentStatus(_ attachment: SyncAttachment) async throws -> AttachmentStatus? { try await base.attachmentStatus(attachment) }
    public func upload(_ attachment: SyncAttachment, chunk index: Int, _ bytes: Data) async throws -> AttachmentStatus {
        try await base.upload(attachment, chunk: index, bytes)
    }
    public func download(_ attachment: SyncAttachment, chunk index: Int) async throws -> Data { try await base.download(attachment, chunk: index) }
    public func updateBearer(_ token: String) { base.updateBearer(token) }
}
