import CSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `sqlite3_preupdate_hook`, looked up at run time: it exists only when the
/// SQLite library was compiled with `SQLITE_ENABLE_PREUPDATE_HOOK`.
enum PreupdateHook {
    typealias Callback = @convention(c) (
        UnsafeMutableRawPointer?, OpaquePointer?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?, sqlite3_int64, sqlite3_int64
    ) -> Void
    typealias Install = @convention(c) (OpaquePointer?, Callback?, UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?

    typealias Read = @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Int32
    typealias Count = @convention(c) (OpaquePointer?) -> Int32

    /// The library's `sqlite3_preupdate_hook`, or nil when it has none.
    static let install: Install? = symbol("sqlite3_preupdate_hook", as: Install.self)
    /// `sqlite3_preupdate_old`: a column's value before the change.
    static let old: Read? = symbol("sqlite3_preupdate_old", as: Read.self)
    /// `sqlite3_preupdate_new`: a column's value after the change.
    static let new: Read? = symbol("sqlite3_preupdate_new", as: Read.self)
    /// `sqlite3_preupdate_count`: the number of columns of the row.
    static let count: Count? = symbol("sqlite3_preupdate_count", as: Count.self)

    private static func symbol<T>(_ name: String, as type: T.Type) -> T? {
        guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, name) else { return nil }
        return unsafeBitCast(symbol, to: type)
    }
}
