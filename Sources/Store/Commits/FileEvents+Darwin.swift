#if canImport(Darwin)
import Darwin
import Dispatch
import Foundation
#if canImport(notify)
import notify
#endif

/// Apple platforms: dispatch file-system sources (kqueue) on the database's
/// `-wal` file, its main file and its folder, and a Darwin notification that
/// Sluice stores post after each commit, for processes sharing the file
/// through an App Group (an app and its widget).
///
/// (Not built by our CI, which runs on Linux: it uses only documented
/// Dispatch and `notify(3)` calls, kept in this one file.)
final class DarwinFileEvents: FileEventSource, @unchecked Sendable {
    // @unchecked Sendable: all state is touched only on `queue`.

    private let path: String
    private let queue: DispatchQueue
    private let handler: @Sendable (FileEvent) -> Void
    private let notificationName: String
    private var files: [DispatchSourceFileSystemObject] = []
    private var folder: DispatchSourceFileSystemObject?
    private var notifyToken: Int32 = 0
    private var notifying = false

    init(path: String, queue: DispatchQueue, handler: @escaping @Sendable (FileEvent) -> Void) {
        self.path = path
        self.queue = queue
        self.handler = handler
        // One name per file, the same in every process that opens it.
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325    // FNV-1a
        for byte in resolved.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        notificationName = "org.sluice.commit." + String(hash, radix: 16)
    }

    func start() -> Bool {
        guard folder == nil else { return true }
        let parent = (path as NSString).deletingLastPathComponent
        guard let folder = source(parent.isEmpty ? "." : parent, mask: .write, event: .replaced) else { return false }
        self.folder = folder
        watchFiles()
        let handler = handler
        notifying = notify_register_dispatch(notificationName, &notifyToken, queue) { _ in handler(.written) } == NOTIFY_STATUS_OK
        return true
    }

    func stop() {
        files.forEach { $0.cancel() }
        files = []
        folder?.cancel()
        folder = nil
        if notifying { notify_cancel(notifyToken) }
        notifying = false
    }

    func announceCommit() {
        notify_post(notificationName)
    }

    deinit {
        stop()
    }

    /// Watches the `-wal` and main files (again: either may have been made anew).
    private func watchFiles() {
        files.forEach { $0.cancel() }
        files = [path + "-wal", path].compactMap { source($0, mask: [.write, .extend], event: .written) }
    }

    private func source(_ file: String, mask: DispatchSource.FileSystemEvent, event: FileEvent) -> DispatchSourceFileSystemObject? {
        let descriptor = open(file, O_EVTONLY)
        guard descriptor >= 0 else { return nil }
        let source = DispatchSource.makeFileSystemObjectSource(fileDescriptor: descriptor, eventMask: mask, queue: queue)
        let handler = handler
        source.setEventHandler { [weak self] in
            if event == .replaced {
                self?.watchFiles()
                handler(.replaced)
            }
            handler(.written)
        }
        source.setCancelHandler { close(descriptor) }
        source.resume()
        return source
    }
}
#endif
