import Foundation

/// Requests per token, as a token bucket per bearer token (per instance: each instance
/// of the service limits what reaches it; a load balancer spreading requests over n
/// instances allows up to n times the rate).
actor RateLimiter {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private let rate: Double
    private let burst: Double
    private var buckets: [String: Bucket] = [:]
    private let clock = ContinuousClock()

    /// `rate` requests per second on average, up to `burst` at once.
    init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = burst
    }

    /// Takes one request from `key`'s bucket; false when it is empty.
    func allow(_ key: String) -> Bool {
        let now = clock.now
        var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
        let elapsed = bucket.updated.duration(to: now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        bucket.tokens = min(burst, bucket.tokens + seconds * rate)
        bucket.updated = now
        let allowed = bucket.tokens >= 1
        if allowed { bucket.tokens -= 1 }
        buckets[key] = bucket
        if buckets.count > 100_000 { buckets = buckets.filter { $0.value.tokens < burst } }
        return allowed
    }
}
