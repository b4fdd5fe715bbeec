import Foundation

/// Hosts on this machine, each a network namespace of its own with an address on a bridge
/// (`10.213.<n>.<i>/24`, a private net of the project's own that nothing routes), the test
/// process reaching them all from the bridge's address `.254`; links can be cut and mended.
/// Needs root and `ip netns` (a container may refuse them: then ``skipReason`` says why).
final class NetworkLab: @unchecked Sendable {
    // @unchecked Sendable: set up once by one test, then only read.
    let hosts: [String]
    private let tag: String
    private let subnet: Int
    private var made: [String] = []

    /// Why namespaces cannot be used here, or nil.
    static let skipReason: String? = {
        if ProcessInfo.processInfo.environment["SLUICE_NO_NETNS"] == "1" { return "SLUICE_NO_NETNS=1" }
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") else {
            return "network namespaces need root and iproute2's ip"
        }
        let probe = "sluice-probe-\(getpid())"
        do {
            try run(["netns", "add", probe])
            try run(["netns", "del", probe])
            return nil
        } catch {
            return "this machine refuses network namespaces (\(error))"
        }
    }()

    init(hosts: [String]) throws {
        self.hosts = hosts
        tag = String(getpid() % 100_000)
        subnet = Int(getpid() % 200) + 20
        do {
            try Self.run(["link", "add", bridge, "type", "bridge"])
            made.append("bridge")
            try Self.run(["addr", "add", "10.213.\(subnet).254/24", "dev", bridge])
            try Self.run(["link", "set", bridge, "up"])
            for (index, host) in hosts.enumerated() {
                try Self.run(["netns", "add", namespace(host)])
                made.append(host)
                try Self.run(["link", "add", outside(host), "type", "veth", "peer", "name", "eth\(index)", "netns", namespace(host)])
                try Self.run(["link", "set", outside(host), "master", bridge])
                try Self.run(["link", "set", outside(host), "up"])
                try Self.run(["netns", "exec", namespace(host), "ip", "addr", "add", "\(address(host))/24", "dev", "eth\(index)"])
                try Self.run(["netns", "exec", namespace(host), "ip", "link", "set", "eth\(index)", "up"])
                try Self.run(["netns", "exec", namespace(host), "ip", "link", "set", "lo", "up"])
            }
        } catch {
            tearDown()
            throw error
        }
    }

    private var bridge: String { "slbr\(tag)" }
    private func outside(_ host: String) -> String { "sl\(tag)v\(hosts.firstIndex(of: host) ?? 0)" }

    /// The namespace of a host.
    func namespace(_ host: String) -> String { "sluice-\(tag)-\(host)" }

    /// The address of a host.
    func address(_ host: String) -> String { "10.213.\(subnet).\((hosts.firstIndex(of: host) ?? 0) + 1)" }

    /// Cuts (or mends) a host's link to the others. Cut, the other hosts forget its
    /// hardware address, so that a connection to it fails once resolving the address
    /// again does (about three seconds) instead of its packets vanishing until a timeout.
    func link(_ host: String, up: Bool) throws {
        try Self.run(["link", "set", outside(host), up ? "up" : "down"])
        guard !up else { return }
        for other in hosts where other != host {
            try Self.run(["netns", "exec", namespace(other), "ip", "neigh", "flush", "all"])
        }
    }

    /// Runs a command in a host's namespace; its exit status.
    func exec(_ host: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["netns", "exec", namespace(host)] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    func tearDown() {
        for host in hosts where made.contains(host) { _ = try? Self.run(["netns", "del", namespace(host)]) }
        if made.contains("bridge") { _ = try? Self.run(["link", "del", bridge]) }
        made = []
    }

    deinit { tearDown() }

    private static func run(_ arguments: [String]) throws {
        _ = try PostgresCluster.run("/usr/sbin/ip", arguments)
    }
}
