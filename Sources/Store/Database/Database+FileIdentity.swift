import Foundation

// A writer refuses to write into a file that is no longer the one at its
// path: what it committed there, no one would read.
extension Database {
    /// Throws `.fileReplaced` when the file this connection writes is no
    /// longer the one at its path: a write there would commit into a file no
    /// one will read again.
    func checkFileInPlace() throws {
        guard connection.hasMoved else { return }
        throw Self.fileReplaced(connection.path)
    }

    static func fileReplaced(_ path: String) -> StoreError {
        StoreError(code: .fileReplaced, message: "the database file at \(path) was replaced or deleted while the store had it open; "
                   + "nothing more is written to the old file (no one could read it): open the store again to use the file at that path")
    }
}

/// The file a store opened (device and inode), so it opens no connection to
/// another file put at its path later.
///
/// A file renamed over an open WAL database finds the old database's `-wal`
/// and `-shm` beside it; a connection opened there reads the old frames over
/// the new file, and closing it, as the last connection on the new file,
/// checkpoints them into it. So once the file at the path is not the one
/// the store opened, the store opens nothing more there.
///
/// Thread-safe.
final class OpenedFile: Sendable {
    let path: String
    private let identity = Mutex<FileIdentity?>(nil)

    struct FileIdentity: Equatable {
        var device: UInt64
        var inode: UInt64
    }

    init(path: String) {
        self.path = path
    }

    /// Notes the file now at the path as the store's (the first call only:
    /// after the store's first connection opened it).
    func noteOpened() {
        guard let now = Self.identity(of: path) else { return }
        identity.withLock { if $0 == nil { $0 = now } }
    }

    /// Whether the file at the path is not the one noted (replaced, or deleted).
    var isReplaced: Bool {
        guard let opened = identity.withLock({ $0 }) else { return false }
        return Self.identity(of: path) != opened
    }

    /// Throws `.fileReplaced` when the file at the path is not the one noted.
    func check() throws {
        if isReplaced { throw Database.fileReplaced(path) }
    }

    static func identity(of path: String) -> FileIdentity? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
              let device = (attributes[.systemNumber] as? NSNumber)?.uint64Value,
              let inode = (attributes[.systemFileNumber] as? NSNumber)?.uint64Value else { return nil }
        return FileIdentity(device: device, inode: inode)
    }
}
