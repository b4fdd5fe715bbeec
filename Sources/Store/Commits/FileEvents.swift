import Dispatch
import Foundation

/// What a database's files told the store.
enum FileEvent: Sendable {
    /// A file a commit writes was written (perhaps by a commit still in
    /// progress, or by a checkpoint): look at the commit counter.
    case written
    /// The database's name was created, moved or deleted in its folder:
    /// the file may have been replaced.
    case replaced
}

/// Wakes `ExternalCommits` when another connection or process may have
/// committed. One implementation per platform, each in its own file
/// (`FileEvents+Linux.swift`: inotify; `FileEvents+Darwin.swift`: dispatch
/// file-system sources and Darwin notifications), and `PollingFileEvents`
/// where neither can run. Every method is called on the queue given at init,
/// where the handler runs too.
protocol FileEventSource: AnyObject {
    /// Starts watching; false when it cannot (the caller then polls).
    func start() -> Bool
    /// Stops watching; nothing runs afterwards.
    func stop()
    /// Tells other processes' stores of a commit this store made, where
    /// file events do not reach them (nothing on Linux).
    func announceCommit()
}

/// The event source of this platform, or nil where there is none.
func platformFileEvents(path: String, queue: DispatchQueue, handler: @escaping @Sendable (FileEvent) -> Void) -> FileEventSource? {
    #if canImport(Glibc)
    return InotifyFileEvents(path: path, queue: queue, handler: handler)
    #elseif canImport(Darwin)
    return DarwinFileEvents(path: path, queue: queue, handler: handler)
    #else
    return nil
    #endif
}

/// The safety poll, where no event source can run: one look every
/// `interval` (a second), reported as a write.
final class PollingFileEvents: FileEventSource, @unchecked Sendable {
    // @unchecked Sendable: `timer` is touched only on `queue`.

    static let interval: DispatchTimeInterval = .seconds(1)

    private let queue: DispatchQueue
    private let handler: @Sendable (FileEvent) -> Void
    private var timer: DispatchSourceTimer?

    init(queue: DispatchQueue, handler: @escaping @Sendable (FileEvent) -> Void) {
        self.queue = queue
        self.handler = handler
    }

    func start() -> Bool {
        guard timer == nil else { return true }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + Self.interval, repeating: Self.interval, leeway: .milliseconds(100))
        let handler = handler
        timer.setEventHandler {
            handler(.replaced)
            handler(.written)
        }
        timer.resume()
        self.timer = timer
        return true
    }

    func stop() {
        timer?.cancel()
        timer = nil
    }

    func announceCommit() {}

    deinit {
        timer?.cancel()
    }
}
