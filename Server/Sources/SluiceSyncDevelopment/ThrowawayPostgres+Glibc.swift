import Foundation

#if canImport(Glibc)
/// Closes every descriptor from 3 up in a spawned child (glibc 2.34+).
func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
    _ = posix_spawn_file_actions_addclosefrom_np(&actions, 3)
}

/// glibc's `posix_spawn_file_actions_addclosefrom_np`, which the Glibc module does not export.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func posix_spawn_file_actions_addclosefrom_np(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32
#else
/// Elsewhere descriptors are inherited (Darwin's `POSIX_SPAWN_CLOEXEC_DEFAULT` is an attribute,
/// not a file action); a development server does not need more.
func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {}
#endif
