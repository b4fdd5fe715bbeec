import Foundation

/// The one answer an awaiting caller gets when two things race to give it (a request and its
/// cancellation, a piece of work and its deadline): the first result resumes the caller, later
/// ones are dropped. The result may come before the caller starts waiting.
///
/// Used by the client's transport and the service's deadlines (a package of its own, hence
/// SPI: `@_spi(SluiceInternal) import SluiceSyncProtocol`); not part of the protocol.
@_spi(SluiceInternal)
public final class FirstAnswer<Value: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `continuation` and `result` are only touched with `lock` held.
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Value, any Error>?
    private var result: Result<Value, any Error>?

    /// A race with no answer yet.
    public init() {}

    /// Registers the waiting caller. Returns false, the caller already resumed, when the
    /// answer came first.
    ///
    /// - Parameter continuation: the caller's continuation, resumed with the answer.
    /// - Returns: whether the caller now waits (false: it was resumed at once).
    @discardableResult
    public func wait(_ continuation: CheckedContinuation<Value, any Error>) -> Bool {
        let early: Result<Value, any Error>? = lock.withLock {
            if let result { return result }
            self.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
        return early == nil
    }

    /// Gives `result` unless an answer was given already; true when it was this one.
    ///
    /// - Parameter result: the answer.
    /// - Returns: whether this was the first answer (and was given).
    @discardableResult
    public func finish(_ result: Result<Value, any Error>) -> Bool {
        let (continuation, first): (CheckedContinuation<Value, any Error>?, Bool) = lock.withLock {
            guard self.result == nil else { return (nil, false) }
            self.result = result
            defer { self.continuation = nil }
            return (self.continuation, true)
        }
        continuation?.resume(with: result)
        return first
    }
}
