import Foundation
import SluiceSyncClient
import SluiceSyncProtocol

/// A sync service the conformance scenarios run against: the real one over HTTP (the
/// Server package's tests), or ``HistoryService`` in memory (the root package's).
public protocol ConformanceService: Sendable {
    /// A new credential for the scenarios' space (two tokens are two users or devices).
    func newToken() async throws -> String
    /// A transport that sends requests with `token`, saying `schemaVersion` (nil: none).
    func transport(token: String, schemaVersion: Int?) -> any SyncTransport
    /// The head of the space's history.
    func head() async throws -> Int64
    /// The space's current rows as ``SyncContent`` renders them.
    func content() async throws -> [String]
    /// Compacts the space's history (as `sluice-sync compact --horizon-days`): how far it
    /// is pruned now.
    func compact(horizonDays: Int) async throws -> Int64
}

extension ConformanceService {
    /// A transport that sends requests with `token`, saying no schema version.
    public func transport(token: String) -> any SyncTransport { transport(token: token, schemaVersion: nil) }
}

/// A transport that fails the next push on demand, around any other: before it reaches
/// the service, or after the service stored it (its answer lost); it also cuts attachments'
/// transfers and damages their bytes on demand. Every push and pull is recorded.
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
    /// How many more chunks go up or down before the link is cut (nil: not cut).
    private var chunksBeforeCut: Int?
    /// The chunk whose downloaded bytes arrive damaged.
    private var damagedChunk: Int?
    /// Rows a page of a round holds at most (nil: the service's page size).
    private var rowsPerPage: Int?
    /// How many more pages of rows arrive before the next one is lost (nil: none is).
    private var rowsPagesBeforeCut: Int?
    /// Whether rows requests are answered 404, as by a service older than partial sync.
    private var rowsUnknown = false
    /// A push held back (by its first transaction's number) until the push of another has
    /// been answered.
    private var held: (local: Int64, until: Int64)?
    /// What runs before the rows request of that number (counted from 1), once.
    private var beforeRows: (number: Int, action: @Sendable () async throws -> Void)?
    /// How many rows requests came so far.
    private var rowsRequests = 0
    /// A push to fail (by its first transaction's number), and how.
    private var failing: (local: Int64, fault: Fault)?
    /// The first transaction's number of each push answered (or refused) so far.
    private var answered: Set<Int64> = []

    public init(_ base: any SyncTransport) { self.base = base }

    /// Makes the next push fail as `fault` says.
    public func failNextPush(_ fault: Fault) { lock.withLock { self.fault = fault } }

    /// Makes the push of transaction `local` (its first) fail as `fault` says, once: after
    /// storing, the first time the service takes it.
    public func failPush(of local: Int64, _ fault: Fault) { lock.withLock { failing = (local, fault) } }

    /// Holds the push of transaction `local` back until the push of `other` has been
    /// answered (at most 30 s), so that `other` overtakes it.
    public func holdPush(of local: Int64, until other: Int64) { lock.withLock { held = (local, other) } }

    /// Lets `count` more chunks go up or down, and then cuts the link for every other
    /// chunk (an attachment's transfer cut in the middle) until ``mend()``.
    public func cutChunks(after count: Int) { lock.withLock { chunksBeforeCut = count } }

    /// Damages the bytes of chunk `index` of every download (same length, other bytes),
    /// as a service's damaged copy would, until ``mend()``.
    public func damageChunk(_ index: Int) { lock.withLock { damagedChunk = index } }

    /// Asks for pages of at most `limit` rows (a round of several pages from a few rows).
    public func pageRows(by limit: Int) { lock.withLock { rowsPerPage = limit } }

    /// Answers rows requests 404 from now on, as a service without the rows endpoint (older
    /// than partial sync) does.
    public func answerRowsNotFound() { lock.withLock { rowsUnknown = true } }

    /// Runs `action` (another device's writes, say) before the `number`th rows request from
    /// now (counted from 1), once.
    public func beforeRowsPage(_ number: Int, _ action: @escaping @Sendable () async throws -> Void) {
        lock.withLock {
            beforeRows = (rowsRequests + number, action)
        }
    }

    /// Lets `count` more pages of rows arrive, and then loses the next one (once).
    public func cutRows(after count: Int) { lock.withLock { rowsPagesBeforeCut = count } }

    /// Ends ``cutChunks(after:)``, ``damageChunk(_:)`` and ``cutRows(after:)``.
    public func mend() { lock.withLock { (chunksBeforeCut, damagedChunk, rowsPagesBeforeCut) = (nil, nil, nil) } }

    /// Whether the next chunk goes across (the cut counts it).
    private func chunkGoesAcross() -> Bool {
        lock.withLock {
            guard let left = chunksBeforeCut else { return true }
            chunksBeforeCut = max(0, left - 1)
            return left > 0
        }
    }

    /// The calls so far: `push DEVICE base N locals [...]`, `pull since N`, `rows since N`.
    public var calls: [String] { lock.withLock { log } }

    public func push(_ push: PushRequest) async throws -> SyncPushOutcome {
        let first = push.transactions.first?.local
        // A push failed by number fails the first time it can: one the service refuses (a
        // part that overtook the one before it) is not stored, and the next try is failed.
        let (fault, targeted) = lock.withLock { () -> (Fault?, Fault?) in
            log.append("push \(push.device) base \(push.base) locals \(push.transactions.map(\.local))")
            if let failing, failing.local == first {
                if failing.fault == .beforeStoring { self.failing = nil }
                return (nil, failing.fault)
            }
            defer { self.fault = nil }
            return (self.fault, nil)
        }
        if let hold = lock.withLock({ held }), hold.local == first {
            let deadline = ContinuousClock.now + .seconds(30)
            while !lock.withLock({ answered.contains(hold.until) }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
            lock.withLock { held = nil }
        }
        defer { if let first { _ = lock.withLock { answered.insert(first) } } }
        if fault == .beforeStoring || targeted == .beforeStoring { throw SyncClientError.offline("the push did not reach the service") }
        let outcome = try await base.push(push)
        if fault == .afterStoring { throw SyncClientError.offline("the service's answer was lost") }
        if targeted == .afterStoring, case .accepted = outcome, lock.withLock({ () -> Bool in
            guard failing?.local == first else { return false }
            failing = nil
            return true
        }) {
            throw SyncClientError.offline("the service's answer was lost")
        }
        return outcome
    }

    public func pull(since: Int64, limit: Int?, device: String?) async throws -> PullResponse {
        lock.withLock { log.append("pull since \(since)") }
        return try await base.pull(since: since, limit: limit, device: device)
    }

    public func rows(_ rows: RowsRequest) async throws -> RowsResponse {
        var request = rows
        let hook = lock.withLock { () -> (@Sendable () async throws -> Void)? in
            rowsRequests += 1
            guard let before = beforeRows, before.number == rowsRequests else { return nil }
            beforeRows = nil
            return before.action
        }
        try await hook?()
        let (cut, unknown) = lock.withLock { () -> (Bool, Bool) in
            log.append("rows since \(rows.since)")
            guard !rowsUnknown else { return (false, true) }
            request.limit = rowsPerPage ?? request.limit
            guard let left = rowsPagesBeforeCut else { return (false, false) }
            rowsPagesBeforeCut = left > 0 ? left - 1 : nil
            return (left == 0, false)
        }
        if unknown { throw SyncClientError.rejected(status: 404, SyncErrorBody(error: "http_404", message: "Not Found")) }
        if cut { throw SyncClientError.offline("the link was cut while a page of rows came down") }
        return try await base.rows(request)
    }
    public func share(_ share: ShareRequest) async throws -> ShareResponse { try await base.share(share) }
    public func wait(since: Int64, timeout: Int) async throws -> Int64 { try await base.wait(since: since, timeout: timeout) }
    public func attachmentStatus(_ attachment: SyncAttachment) async throws -> AttachmentStatus? { try await base.attachmentStatus(attachment) }
    public func upload(_ attachment: SyncAttachment, chunk index: Int, _ bytes: Data) async throws -> AttachmentStatus {
        guard chunkGoesAcross() else { throw SyncClientError.offline("the link was cut while chunk \(index) went up") }
        return try await base.upload(attachment, chunk: index, bytes)
    }
    public func download(_ attachment: SyncAttachment, chunk index: Int) async throws -> Data {
        guard chunkGoesAcross() else { throw SyncClientError.offline("the link was cut while chunk \(index) came down") }
        let bytes = try await base.download(attachment, chunk: index)
        guard lock.withLock({ damagedChunk == index }) else { return bytes }
        return Data(bytes.map { ~$0 })
    }
    public func updateBearer(_ token: String) { base.updateBearer(token) }
}
