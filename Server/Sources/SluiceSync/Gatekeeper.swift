import Foundation

/// What stands between requests and PostgreSQL (per instance), so that no client, with or
/// without a valid token, can make the service spend its database:
///
/// - each token's requests are rate-limited before anything else, a 429 costs no query;
/// - unknown tokens are remembered for a moment, so a flood of one bad token costs one
///   query; lookups that find no token are counted per client address, and an address
///   past its count gets 429 before any lookup, so a flood of made-up tokens costs a few
///   queries a second (valid tokens are always looked up: a revoked one is refused at once);
/// - request bodies in flight are held to a byte budget, and requests working on the
///   database at once to a number: past either, 503 with `Retry-After`.
final class Gatekeeper: @unchecked Sendable {
    // @unchecked Sendable: every stored property is guarded by `lock`.
    struct Limits: Sendable {
        var requestsPerSecond: Double
        var burst: Double
        var lookupsPerSecondPerAddress: Double = 20
        var lookupBurst: Double = 100
        var tokenMemory: Duration = .seconds(2)
        var inflightBytes: Int
        var concurrentRequests: Int
    }

    /// What to do with a request's token.
    enum Admission: Equatable {
        /// Unknown or revoked a moment ago: 401.
        case unknown
        /// Look it up, then ``looked(up:from:space:)``.
        case lookUp
        /// Over a limit: 429.
        case limited
    }

    private let lock = NSLock()
    private let limits: Limits
    private var perToken: RateLimiter
    private var perAddress: RateLimiter
    private var unknown: [String: ContinuousClock.Instant] = [:]
    private var bytes = 0
    private var requests = 0
    private var longPolls = 0
    private let clock = ContinuousClock()

    init(_ limits: Limits) {
        self.limits = limits
        perToken = RateLimiter(rate: limits.requestsPerSecond, burst: limits.burst)
        perAddress = RateLimiter(rate: limits.lookupsPerSecondPerAddress, burst: limits.lookupBurst)
    }

    func admit(token: String, address: String) -> Admission {
        let now = clock.now
        return lock.withLock {
            guard perToken.allow(token, now: now) else { return .limited }
            if let until = unknown[token], until > now { return .unknown }
            // Taken now, given back when the token opens a space: requests at once cannot all
            // pass on the one lookup left.
            return perAddress.allow(address, now: now) ? .lookUp : .limited
        }
    }

    /// Records a lookup's result: a token that opened a space gives back the lookup it took
    /// from its address; one that found nothing keeps it counted and is remembered as
    /// unknown for a moment. (Lookups under way at once each hold one, so a burst of valid
    /// tokens from one address larger than the bucket waits a moment too.)
    func looked(up token: String, from address: String, space: Int64?) {
        let now = clock.now
        lock.withLock {
            guard space == nil else {
                perAddress.refund(address)
                return
            }
            unknown[token] = now + limits.tokenMemory
            if unknown.count > 100_000 { unknown = unknown.filter { $0.value > now } }
        }
    }

    /// Takes a place for a request working on the database, and `bytes` of body; false
    /// (nothing taken) when either is used up.
    func enter(bytes wanted: Int) -> Bool {
        let depths: (Int, Int)? = lock.withLock {
            guard requests < limits.concurrentRequests, wanted == 0 || bytes + wanted <= limits.inflightBytes else { return nil }
            requests += 1
            bytes += wanted
            return (requests, bytes)
        }
        guard let depths else { return false }
        SyncMetrics.depths(requests: depths.0, bytes: depths.1)
        return true
    }

    func leave(bytes taken: Int) {
        let depths = lock.withLock {
            requests -= 1
            bytes -= taken
            return (requests, bytes)
        }
        SyncMetrics.depths(requests: depths.0, bytes: depths.1)
    }

    /// Counts a long poll waiting (they take no place: a gauge of them only).
    func enterLongPoll() {
        SyncMetrics.longPolls(lock.withLock { longPolls += 1; return longPolls })
    }

    func leaveLongPoll() {
        SyncMetrics.longPolls(lock.withLock { longPolls -= 1; return longPolls })
    }

    /// Whether the instance is at its limit of requests or body bytes in flight.
    var isSaturated: Bool {
        lock.withLock { requests >= limits.concurrentRequests || bytes >= limits.inflightBytes }
    }
}
