import Foundation

extension HTTPSyncTransport {
    /// The body size above which a request asks the service to answer once its body is in
    /// (`Prefer: respond-async`) and fetches the answer with a small request.
    ///
    /// Foundation's URLSession on Linux (swift-corelibs-foundation over libcurl) keeps a
    /// socket's write source after sending a body larger than curl's 64 KiB upload buffer
    /// and spins on it until the answer arrives: a first upload's parts and attachment chunks
    /// waiting for PostgreSQL spent about a third of a device's CPU so (2026-12-04). Apple's
    /// URLSession does not spin, and the fetch would only add a round trip.
    static var defaultAnswerLaterAbove: Int? {
        #if canImport(FoundationNetworking)
        64 << 10
        #else
        nil
        #endif
    }
}
