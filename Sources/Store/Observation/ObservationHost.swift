import Dispatch

/// What `Results` and object observations need of a store: reads, and
/// registering observations. The `Store` facade conforms; nothing below it
/// names it.
protocol ObservationHost: AnyObject, Sendable {
    /// Runs `body` in a read transaction.
    func read<T>(_ body: (Database) throws -> T) throws -> T
    /// Starts an observation: its first state is read on the observation
    /// queue and delivered asynchronously.
    func register(_ observation: some StoreObservation & TokenBearing) -> ObservationToken
    /// Starts an observation whose first state `start` reads now, on the
    /// caller's thread, at a snapshot placed in the sequence of commits.
    func registerImmediately(_ observation: some StoreObservation & TokenBearing, start: (Database, ReadPin) -> Void) -> ObservationToken
    /// Runs `work` on the observation queue, between two events (a
    /// window's count, a request to resize it).
    func perform(_ work: @escaping @Sendable () -> Void)
}

/// When an observation delivers its first state.
public enum ObservationScheduling: Sendable {
    /// On the observation's queue, like every later change (the default).
    case async
    /// Before `observe` returns, on the calling thread (call it from the
    /// queue you observe on, usually the main queue): a view model's list
    /// is then never empty for a frame. Later changes arrive on the queue.
    case immediate
}
