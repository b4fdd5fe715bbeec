import Foundation

/// Which file a store is: the file system's device and file numbers of its path. A copy
/// of the file (a backup restored, an app moved to a new phone, `cp`) has another; the
/// same file keeps its own however it is written to (VACUUM rewrites it in place).
///
/// Foundation reads both numbers on Linux (`stat`) and on Apple platforms (where they are
/// the volume's and the file's ids, the same `stat` fields), so there is no per-platform code.
enum FileIdentity {
    /// `"<device>:<file>"`, or nil when the path has no file (an in-memory store) or the
    /// file system does not say.
    static func of(path: String) -> String? {
        guard !path.isEmpty, path != ":memory:",
              let attributes = try? FileManager.default.attributesOfItem(atPath: path),
              let device = (attributes[.systemNumber] as? NSNumber)?.uint64Value,
              let file = (attributes[.systemFileNumber] as? NSNumber)?.uint64Value, file != 0
        else { return nil }
        return "\(device):\(file)"
    }
}
