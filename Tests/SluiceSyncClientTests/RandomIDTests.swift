import Foundation
@testable import SluiceSyncClient
import Testing

/// New ids are UUIDs in lower case, as Foundation spells them, and differ: a device's
/// random (version 4), a row's time-ordered (version 7: the milliseconds, then random bits).
@Suite(.timeLimit(.minutes(10))) struct RandomIDTests {
    @Test func anIDIsARandomUUIDInLowerCase() throws {
        var seen: Set<String> = []
        for _ in 0..<2_000 {
            let id = RandomID.make()
            let uuid = try #require(UUID(uuidString: id), "\(id)")
            #expect(uuid.uuidString.lowercased() == id)
            let bytes = uuid.uuid
            #expect(bytes.6 >> 4 == 4, "version 4: \(id)")
            #expect(bytes.8 >> 6 == 0b10, "RFC 4122 variant: \(id)")
            seen.insert(id)
        }
        #expect(seen.count == 2_000)
    }

    @Test func aRowsIDIsATimeOrderedUUIDThatSortsByItsMillisecond() throws {
        var previous = ""
        var seen: Set<String> = []
        let start: UInt64 = 1_796_500_000_000
        for step in 0..<2_000 {
            let milliseconds = start + UInt64(step / 4)
            let id = RandomID.timeOrdered(now: milliseconds)
            let uuid = try #require(UUID(uuidString: id), "\(id)")
            #expect(uuid.uuidString.lowercased() == id)
            let bytes = uuid.uuid
            #expect(bytes.6 >> 4 == 7, "version 7: \(id)")
            #expect(bytes.8 >> 6 == 0b10, "RFC 4122 variant: \(id)")
            let stamp = [bytes.0, bytes.1, bytes.2, bytes.3, bytes.4, bytes.5].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            #expect(stamp == milliseconds, "\(id)")
            // A later millisecond sorts after every id of an earlier one.
            if step % 4 == 0 { #expect(id > previous, "\(previous) then \(id)") }
            previous = max(previous, id)
            seen.insert(id)
        }
        #expect(seen.count == 2_000)
        // Now, by default.
        let now = UInt64(Date().timeIntervalSince1970 * 1_000)
        let made = try #require(UUID(uuidString: RandomID.timeOrdered())).uuid
        let stamp = [made.0, made.1, made.2, made.3, made.4, made.5].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        #expect(stamp >= now && stamp < now + 60_000)
    }
}
