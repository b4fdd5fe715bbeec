import Foundation
import Testing
@testable import Store

/// Programmer errors trap with a message (as swift-collections' checks do);
/// input never reaches these.
@Suite struct TrapTests {
    @Test func snapshotIndexOutOfBoundsTraps() async {
        await #expect(processExitsWith: .failure) {
            let snapshot = ResultsSnapshot(tree: OrderedTree<Int>(order: SortOrder(terms: [])))
            _ = snapshot[0]
        }
    }

    @Test func rowWithMismatchedColumnsTraps() async {
        await #expect(processExitsWith: .failure) {
            _ = Row(columns: ["a", "b"], values: [.null])
        }
    }
}
