import Foundation
@testable import SluiceSyncClient
import Testing

/// New ids are version-4 UUIDs in lower case, as Foundation spells them, and differ.
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
}
