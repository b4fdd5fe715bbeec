import Foundation

/// A lock around a value (Synchronization's Mutex needs macOS 15). In
/// `Support/`, beside no layer: every layer may use it.
final class Mutex<Value>: @unchecked Sendable {
    // @unchecked Sendable because `value` is only touched with `lock` held.
    private var value: Value
    private let lock = NSLock()

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
