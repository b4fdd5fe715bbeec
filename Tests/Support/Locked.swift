import Foundation

/// A value behind a lock, for tests that record from several threads.
public final class Locked<Value>: @unchecked Sendable {
    // @unchecked Sendable because `value` is only touched with `lock` held.
    private var value: Value
    private let lock = NSLock()

    public init(_ value: Value) { self.value = value }

    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
