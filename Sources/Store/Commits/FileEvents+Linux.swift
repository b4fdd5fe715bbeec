#if canImport(Glibc)
import Dispatch
import Foundation
import Glibc

/// Linux: an inotify instance watching the database's files and folder,
/// read by a dispatch source (the thread sleeps in the kernel until a file
/// changes: nothing runs while nothing is written).
///
/// - The `-wal` file (every WAL commit writes it) and the main file (every
///   rollback-journal commit, and checkpoints): `IN_MODIFY`.
/// - The folder: the `-journal` file created or deleted (a rollback-journal
///   commit ends by deleting it), the `-wal` file created (then it is
///   watched), and the database's own name created, moved or deleted (the
///   file may have been replaced).
final class InotifyFileEvents: FileEventSource, @unchecked Sendable {
    // @unchecked Sendable: all state is touched only on `queue`.

    private let path: String
    private let queue: DispatchQueue
    private let handler: @Sendable (FileEvent) -> Void
    private var source: DispatchSourceRead?
    private var descriptor: Int32 = -1
    /// Watched files by watch descriptor.
    private var files: [Int32: String] = [:]

    private var folder: String { (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent }
    private var name: String { (path as NSString).lastPathComponent }

    init(path: String, queue: DispatchQueue, handler: @escaping @Sendable (FileEvent) -> Void) {
        self.path = path
        self.queue = queue
        self.handler = handler
    }

    func start() -> Bool {
        dispatchPrecondition(condition: .onQueue(queue))
        guard source == nil else { return true }
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { return false }
        let folderMask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)
        guard inotify_add_watch(descriptor, folder, folderMask) >= 0 else {
            close(descriptor)
            return false
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        source.setEventHandler { [weak self] in self?.readEvents(descriptor) }
        source.setCancelHandler { close(descriptor) }
        self.source = source
        self.descriptor = descriptor
        watch(path + "-wal")
        watch(path)
        source.resume()
        return true
    }

    func stop() {
        source?.cancel()
        source = nil
        descriptor = -1
        files = [:]
    }

    func announceCommit() {}

    deinit {
        source?.cancel()
    }

    /// Watches `file` (again, after it was made anew: the watch follows the file, not the name).
    private func watch(_ file: String) {
        guard descriptor >= 0 else { return }
        let watch = inotify_add_watch(descriptor, file, UInt32(IN_MODIFY))
        guard watch >= 0 else { return }
        files = files.filter { $0.value != file }
        files[watch] = file
    }

    /// Reads every queued event, then tells the handler once per kind.
    private func readEvents(_ descriptor: Int32) {
        var written = false
        var replaced = false
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let (watchID, mask, length) = buffer.withUnsafeBytes { raw in
                    (raw.loadUnaligned(fromByteOffset: offset, as: Int32.self),
                     raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
                     Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)))
                }
                let nameStart = offset + MemoryLayout<inotify_event>.size
                let nameEnd = min(count, nameStart + length)
                let name = String(decoding: buffer[nameStart..<nameEnd].prefix { $0 != 0 }, as: UTF8.self)
                offset = nameEnd
                if mask & UInt32(IN_IGNORED) != 0 {
                    files[watchID] = nil    // its file is gone
                } else if files[watchID] != nil {
                    written = true
                } else if name == self.name + "-wal" {
                    if mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 { watch(path + "-wal") }
                    written = true
                } else if name == self.name + "-journal" {
                    written = true
                } else if name == self.name {
                    replaced = true
                }
            }
        }
        if replaced { handler(.replaced) }
        if written { handler(.written) }
    }
}
#endif
