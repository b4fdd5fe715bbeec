import Foundation

/// A hybrid logical clock reading: milliseconds since 1970 in the high 48 bits and a
/// counter in the low 16, so that readings compare as integers, follow wall-clock time
/// when clocks agree, and still order causally when they do not (a device that has
/// seen a reading only ever stamps later ones).
public struct HybridClock: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The packed reading.
    public let rawValue: Int64

    /// A reading from its packed value.
    ///
    /// - Parameter rawValue: milliseconds since 1970 shifted left by 16, plus the counter.
    public init(rawValue: Int64) { self.rawValue = rawValue }

    /// The reading for a wall-clock time, counter zero.
    ///
    /// - Parameter date: the wall-clock time (before 1970 reads as zero).
    public init(date: Date) {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        rawValue = max(0, milliseconds) << 16
    }

    /// The zero reading, before every other.
    public static let zero = HybridClock(rawValue: 0)

    /// The next reading for a local event at `date`: later than `self` and than the
    /// wall clock.
    ///
    /// - Parameter date: the wall-clock time of the event.
    /// - Returns: the reading: the wall clock's, or one past `self` when the wall clock is behind.
    public func tick(at date: Date) -> HybridClock {
        let wall = HybridClock(date: date)
        return wall.rawValue > rawValue ? wall : HybridClock(rawValue: rawValue &+ 1)
    }

    /// This reading after receiving `other`: the later of the two.
    ///
    /// - Parameter other: a reading received from elsewhere.
    /// - Returns: the later of the two.
    public func receiving(_ other: HybridClock) -> HybridClock { max(self, other) }

    /// The wall-clock part.
    public var date: Date { Date(timeIntervalSince1970: Double(rawValue >> 16) / 1000) }

    public static func < (lhs: HybridClock, rhs: HybridClock) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(Int64.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { "\(rawValue >> 16).\(rawValue & 0xFFFF)" }
}
