import Dispatch

/// Notices commits made by other connections and processes, by polling
/// `PRAGMA data_version` on one connection while anything is observed; and
/// the file being replaced under the store (then it stops).
///
/// > The integer values returned by two invocations of "PRAGMA
/// > data_version" from the same connection will be different if changes
/// > were committed to the database by any other connection in the interim.
///
/// Used only on the queue of the connection it polls.
final class CommitWatcher: @unchecked Sendable {
    // @unchecked Sendable: all state is touched only on `queue`, where the
    // timer fires; the timer handler holds the watcher weakly.

    /// How often another connection's commits are looked for while observing.
    static let interval: DispatchTimeInterval = .milliseconds(10)

    private let connection: Connection
    private let queue: DispatchQueue
    private var last: Int64?
    private var timer: DispatchSourceTimer?

    init(connection: Connection, queue: DispatchQueue) {
        self.connection = connection
        self.queue = queue
    }

    /// Compares data versions from now on.
    func reset() {
        last = try? connection.scalarInt(sql: "PRAGMA data_version")
    }

    /// Whether another connection committed since the last call (or `reset`).
    func otherConnectionCommitted() -> Bool {
        guard let version = try? connection.scalarInt(sql: "PRAGMA data_version") else { return false }
        defer { last = version }
        guard let last else { return false }
        return version != last
    }

    /// Polls every `interval`, calling `onCommit` on the queue for each
    /// change seen, and `onReplaced` once if the file at the path is no
    /// longer the one the connection has open (then it stops polling).
    func start(onCommit: @escaping @Sendable () -> Void, onReplaced: @escaping @Sendable () -> Void) {
        guard timer == nil else { return }
        reset()
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + Self.interval, repeating: Self.interval, leeway: .milliseconds(2))
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            if self.connection.hasMoved {
                self.stop()
                onReplaced()
            } else if self.otherConnectionCommitted() {
                onCommit()
            }
        }
        timer.resume()
        self.timer = timer
    }

    func stop() {
        timer?.cancel()
        timer = nil
    }

    deinit {
        timer?.cancel()
    }
}
