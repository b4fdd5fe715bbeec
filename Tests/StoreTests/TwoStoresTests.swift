import Foundation
import SluiceTestSupport
import Testing
@testable import Sluice

/// Two stores on one file in one process: a commit by one and, at once, a
/// commit by the other reach a subscriber that keeps up as two changesets,
/// one per commit, on either store.
@Suite(.timeLimit(.minutes(2))) struct TwoStoresTests {
    @Test func backToBackCommitsOfTwoStoresAreOneChangesetEach() throws {
        let (first, plain) = try ExternalCommitTests.store()
        let second = try Store(path: first.path)
        let mirrors = [try ExternalCommitTests.mirror(first, plain), try ExternalCommitTests.mirror(second, plain)]
        let pairs = 60
        for pair in 0..<pairs {
            try first.write { tx in try tx.execute(sql: "UPDATE item SET name = ? WHERE id = 1", arguments: [.text("first \(pair)")]) }
            try second.write { tx in try tx.execute(sql: "UPDATE item SET name = ? WHERE id = 2", arguments: [.text("second \(pair)")]) }
            for mirror in mirrors { #expect(mirror.wait(until: try plain.rows(ExternalCommitTests.query))) }
        }
        for (name, mirror) in zip(["first", "second"], mirrors) {
            let changes = ExternalCommitTests.changes(mirror.take().events)
            #expect(changes.count == 2 * pairs, "\(name): \(changes.count) changesets for \(2 * pairs) commits")
            #expect(changes.allSatisfy { $0 == Changes(modifications: [0]) || $0 == Changes(modifications: [1]) }, "\(name)")
        }
    }
}
