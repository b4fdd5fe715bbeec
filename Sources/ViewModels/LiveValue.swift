import Observation
import Sluice

/// A live aggregate kept on the main actor for SwiftUI and `@Observable`
/// view models: `value` holds the current value as soon as this is made,
/// then changes once per commit that changes it.
@MainActor
@Observable
public final class LiveValue<Value: Sendable> {
    /// The value now (nil only while it cannot be computed: see `error`).
    public private(set) var value: Value?
    /// Why the value cannot be computed now; nil once it can.
    public private(set) var error: StoreError?

    @ObservationIgnored private var token: ObservationToken?

    /// Follows an aggregate.
    ///
    /// - Parameter aggregate: the aggregate to follow.
    public init(_ aggregate: LiveAggregate<Value>) {
        token = aggregate.observe(scheduling: .immediate) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let value):
                self.value = value
                if self.error != nil { self.error = nil }
            case .failure(let error):
                self.error = error
            }
        }
    }

    /// Stops observing.
    public func cancel() {
        token?.invalidate()
        token = nil
    }
}
