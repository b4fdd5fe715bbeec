import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy on loopback that forwards to the service and, when told, cuts the
/// connection of the next responses after the request reached the service but before
/// any byte of the answer reached the device: the dropped connection of the fault tests.
/// Or it answers them with a page that is not the protocol's (a captive portal's "200 OK").
final class DroppingProxy: @unchecked Sendable {
    // @unchecked Sendable: the counters are guarded by `lock`; sockets belong to their threads.
    let url: URL
    private let listener: Int32
    private let upstreamPort: UInt16
    private let lock = NSLock()
    private var dropsLeft = 0
    private var droppedCount = 0
    private var garblesLeft = 0
    private var pushSkips: Int?
    private var unavailablePushes = 0
    /// Bytes still let through each way before the connection is cut (nil: no cut set).
    private var upstreamLeft: Int?
    private var downstreamLeft: Int?

    init(upstream: URL) throws {
        upstreamPort = UInt16(upstream.port ?? 80)
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 64) == 0 else { throw CocoaError(.fileWriteUnknown) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        guard let url = URL(string: "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))") else { throw CocoaError(.fileWriteUnknown) }
        self.url = url
        Thread { [weak self] in
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0, let self else { return }
                self.connect(client)
            }
        }.start()
    }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    /// Cuts the next `count` responses.
    func dropNextResponses(_ count: Int) { lock.withLock { dropsLeft = count } }

    /// Answers the next `count` requests (after they reached the service) with an HTML page.
    func garbleNextResponses(_ count: Int) { lock.withLock { garblesLeft = count } }

    /// The answer given instead of the service's.
    static let garbled = Array("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 37\r\nConnection: close\r\n\r\n<html>Sign in to the Wi-Fi</html>\r\n\r\n".utf8)

    /// Cuts the answer to one push, after letting `skipping` push answers through (other
    /// answers pass): the service took that push, the device never hears it did.
    func dropPushResponse(skipping: Int) { lock.withLock { pushSkips = skipping } }

    /// Answers the next `count` pushes, after the service took them, with the 503 the service
    /// gives when its database deadline passes while the work goes on (`unavailable`, Retry-After 1).
    func answerUnavailableToNextPushes(_ count: Int) { lock.withLock { unavailablePushes = count } }

    /// The service's answer when its database deadline passed.
    static let unavailable: [UInt8] = {
        let body = #"{"error":"unavailable","message":"the database did not answer within the request's deadline; try again"}"#
        return Array(("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\n\r\n" + body).utf8)
    }()

    /// Cuts the connection carrying the device's requests once `bytes` more bytes have gone
    /// to the service (mid-upload), once.
    func cutUpload(after bytes: Int) { lock.withLock { upstreamLeft = bytes } }

    /// Cuts the connection carrying the service's answers once `bytes` more bytes have come
    /// to the device (mid-download), once.
    func cutDownload(after bytes: Int) { lock.withLock { downstreamLeft = bytes } }

    /// How many of `count` bytes going one way pass before a cut set with ``cutUpload(after:)``
    /// or ``cutDownload(after:)`` (fewer than `count`: cut after them).
    private func allowance(_ count: Int, upstream: Bool) -> Int {
        lock.withLock {
            guard let left = upstream ? upstreamLeft : downstreamLeft else { return count }
            let passing = min(left, count)
            let next: Int? = passing < count ? nil : left - passing
            if upstream { upstreamLeft = next } else { downstreamLeft = next }
            if passing < count { droppedCount += 1 }
            return passing
        }
    }

    /// How many responses were cut.
    var dropped: Int { lock.withLock { droppedCount } }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func connect(_ client: Int32) {
        let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.loopback(port: upstreamPort)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(server)
            close(client)
            return
        }
        let finished = DispatchGroup()
        finished.enter()
        finished.enter()
        Thread { [weak self] in Self.pump(from: client, to: server, proxy: self, upstream: true); finished.leave() }.start()
        Thread { [weak self] in Self.pump(from: server, to: client, proxy: self, upstream: false); finished.leave() }.start()
        finished.notify(queue: .global()) {
            close(client)
            close(server)
        }
    }

    private enum Action { case forward, cut, garble, unavailable }

    private func action(_ chunk: ArraySlice<UInt8>) -> Action {
        lock.withLock {
            if unavailablePushes > 0, String(decoding: chunk, as: UTF8.self).contains("\"appended\"") {
                unavailablePushes -= 1
                return .unavailable
            }
            if let skips = pushSkips, String(decoding: chunk, as: UTF8.self).contains("\"appended\"") {
                pushSkips = skips > 0 ? skips - 1 : nil
                if skips == 0 {
                    droppedCount += 1
                    return .cut
                }
            }
            if garblesLeft > 0 {
                garblesLeft -= 1
                return .garble
            }
            guard dropsLeft > 0 else { return .forward }
            dropsLeft -= 1
            droppedCount += 1
            return .cut
        }
    }

    private static func pump(from source: Int32, to target: Int32, proxy: DroppingProxy?, upstream: Bool) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        outer: while true {
            let count = read(source, &buffer, buffer.count)
            guard count > 0 else { break }
            let action = upstream ? .forward : proxy?.action(buffer[0..<count]) ?? .forward
            if action == .cut { break }
            let allowed = proxy?.allowance(count, upstream: upstream) ?? count
            let chunk = action == .garble ? garbled : action == .unavailable ? unavailable : Array(buffer[0..<allowed])
            var sent = 0
            while sent < chunk.count {
                let written = chunk.withUnsafeBytes { write(target, $0.baseAddress! + sent, chunk.count - sent) }
                guard written > 0 else { break outer }
                sent += written
            }
            if action == .garble || action == .unavailable || allowed < count { break }
        }
        shutdown(source, Int32(SHUT_RDWR))
        shutdown(target, Int32(SHUT_RDWR))
    }
}
