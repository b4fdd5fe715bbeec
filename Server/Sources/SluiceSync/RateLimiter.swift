import Foundation

/// Token buckets by key (a bearer token, a client address): `rate` requests per second on
/// average, up to `burst` at once. Per instance: a load balancer spreading requests over n
/// instances allows up to n times the rate.
struct RateLimiter {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private let rate: Double
    private let burst: Double
    private var buckets: [String: Bucket] = [:]

    init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = burst
    }

    /// Takes one request from `key`'s bucket; false when it is empty.
    mutating func allow(_ key: String, now: ContinuousClock.Instant) -> Bool {
        var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
        let elapsed = bucket.updated.duration(to: now)
        bucket.tokens = min(burst, bucket.tokens + elapsed.seconds * rate)
        bucket.updated = now
        let allowed = bucket.tokens >= 1
        if allowed { bucket.tokens -= 1 }
        buckets[key] = bucket
        // Full buckets are the default: forgetting them changes nothing.
        if buckets.count > 100_000 { buckets = buckets.filter { $0.value.tokens < burst } }
        return allowed
    }

    /// Gives back one request taken from `key`'s bucket (it turned out not to count).
    mutating func refund(_ key: String) {
        guard var bucket = buckets[key] else { return }
        bucket.tokens = min(burst, bucket.tokens + 1)
        buckets[key] = bucket
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
