import Foundation
import Testing
@testable import Sluice
import SluiceDemo

@Suite(.timeLimit(.minutes(10))) struct OrderedTreeTests {
    static let order = SortOrder(terms: [.init(descending: false, collation: .binary)])

    static func key(_ value: Int64, _ rowID: Int64) -> SortKey {
        SortKey(first: SortValue.integer(value), rest: [], rowID: rowID)
    }

    @Test(arguments: [1, 7, 42])
    func randomOperationsMatchASortedArray(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var tree = OrderedTree<String>(order: Self.order)
        var model: [(SortKey, String)] = []
        var snapshots: [(ResultsSnapshot<String>, [String])] = []
        var nextRowID: Int64 = 1
        for step in 0..<4_000 {
            let roll = random.next(100)
            if roll < 55 || model.isEmpty {
                let key = Self.key(Int64(random.next(500)), nextRowID)
                nextRowID += 1
                let position = tree.insert("v\(key.rowID)", key: key)
                let expected = model.firstIndex { Self.order.less(key, $0.0) } ?? model.count
                #expect(position == expected)
                model.insert((key, "v\(key.rowID)"), at: expected)
            } else if roll < 85 {
                let index = random.next(model.count)
                let removed = tree.remove(key: model[index].0)
                #expect(removed?.position == index)
                #expect(removed?.element == model[index].1)
                model.remove(at: index)
            } else {
                let index = random.next(model.count)
                let position = tree.replace("r\(step)", key: model[index].0)
                #expect(position == index)
                model[index].1 = "r\(step)"
            }
            if step % 400 == 0 { snapshots.append((ResultsSnapshot(tree: tree), model.map(\.1))) }
            let violations = tree._invariantViolations()
            if !violations.isEmpty {
                Issue.record("after step \(step): \(violations)")
                return
            }
        }
        #expect(tree.count == model.count)
        #expect(Array(ResultsSnapshot(tree: tree)) == model.map(\.1))
        for index in stride(from: 0, to: model.count, by: 17) {
            #expect(tree.entry(at: index).element == model[index].1)
            #expect(tree.rank(of: model[index].0) == index)
        }
        // Snapshots taken along the way still show what they showed then.
        for (snapshot, expected) in snapshots {
            #expect(Array(snapshot) == expected)
            #expect(snapshot.count == expected.count)
            if !expected.isEmpty { #expect(snapshot[expected.count / 2] == expected[expected.count / 2]) }
        }
    }

    /// The check finds what it checks: a count that lies, keys out of order.
    @Test func theInvariantCheckFindsABrokenTree() {
        let entries = (0..<500).map { (key: Self.key(Int64($0), Int64($0)), element: $0) }
        let tree = OrderedTree(order: Self.order, sorted: entries)
        #expect(tree._invariantViolations() == [])
        let leaf = tree.root.children[0]
        leaf.count += 1
        #expect(tree._invariantViolations().contains { $0.contains("count") })
        leaf.count -= 1
        leaf.keys.swapAt(0, 1)
        #expect(tree._invariantViolations().contains { $0.contains("ascending") })
    }

    @Test func bulkBuildThenRemoveEverything() {
        let entries = (0..<10_000).map { (key: Self.key(Int64($0 / 3), Int64($0)), element: $0) }
        var tree = OrderedTree(order: Self.order, sorted: entries)
        #expect(tree._invariantViolations() == [])
        #expect(tree.count == 10_000)
        #expect(Array(ResultsSnapshot(tree: tree)) == Array(0..<10_000))
        for (index, entry) in entries.reversed().enumerated() {
            tree.remove(key: entry.key)
            if index % 97 == 0 { #expect(tree._invariantViolations() == [], "after \(index + 1) removals") }
        }
        #expect(tree._invariantViolations() == [])
        #expect(tree.count == 0)
        #expect(Array(ResultsSnapshot(tree: tree)).isEmpty)
        tree.insert(5, key: Self.key(1, 1))
        #expect(Array(ResultsSnapshot(tree: tree)) == [5])
    }
}

@Suite(.timeLimit(.minutes(10))) struct ChangesetBuilderTests {
    /// Applies a changeset to an array of ids, taking new rows from `new`.
    static func apply(_ changeset: Changeset, to old: [Int64], new: [Int64]) -> [Int64] {
        var array = old
        for index in changeset.deletions.reversed() { array.remove(at: index) }
        for index in changeset.insertions { array.insert(new[index], at: index) }
        return array
    }

    @Test(arguments: 0..<40)
    func diffTransformsOldIntoNew(seed: Int) {
        var random = SeededRandom(seed: UInt64(seed) + 100)
        let old = (0..<Int64(random.next(60))).filter { _ in random.next(4) > 0 }.shuffled(using: &random)
        var new = old.filter { _ in random.next(5) > 0 } + (1000..<1000 + Int64(random.next(10)))
        new.shuffle(using: &random)
        if random.next(2) == 0 { new = old.filter { _ in random.next(6) > 0 } }
        let changed = Set(old.filter { _ in random.next(3) == 0 })
        let changeset = ChangesetBuilder.diff(old: old, new: new) { ChangesetBuilder.RowFacts(modified: changed.contains($0)) }
        #expect(Self.apply(changeset, to: old, new: new) == new)
        // Moves are deletions and insertions; survivors keep their order; modifications are survivors.
        #expect(changeset.moves.allSatisfy { changeset.deletions.contains($0.from) && changeset.insertions.contains($0.to) })
        #expect(changeset.moves.allSatisfy { old[$0.from] == new[$0.to] })
        // Minimal: the rows kept in place are a longest common subsequence.
        let common = new.filter(Set(old).contains)
        let kept = common.count - changeset.moves.count
        #expect(kept == Self.longestCommonSubsequence(old.filter(Set(new).contains), common))
        #expect(Set(changeset.modifications).isDisjoint(with: changeset.deletions))
        #expect(changeset.modifications.allSatisfy { changed.contains(old[$0]) })
    }

    @Test(arguments: 0..<40)
    func composingTwoChangesetsEqualsApplyingBoth(seed: Int) {
        var random = SeededRandom(seed: UInt64(seed) + 500)
        let a = (0..<Int64(random.next(40))).map { $0 }.shuffled(using: &random)
        let b = (a.filter { _ in random.next(4) > 0 } + (100..<100 + Int64(random.next(8)))).shuffled(using: &random)
        let c = (b.filter { _ in random.next(4) > 0 } + (200..<200 + Int64(random.next(8)))).shuffled(using: &random)
        let modifiedAB = Set(a.filter { _ in random.next(3) == 0 })
        let modifiedBC = Set(b.filter { _ in random.next(3) == 0 })
        let first = ChangesetBuilder.diff(old: a, new: b) { ChangesetBuilder.RowFacts(modified: modifiedAB.contains($0)) }
        let second = ChangesetBuilder.diff(old: b, new: c) { ChangesetBuilder.RowFacts(modified: modifiedBC.contains($0)) }
        let composed = ChangesetBuilder.compose(first, second, oldCount: a.count)
        #expect(Self.apply(composed, to: a, new: c) == c)
        #expect(composed.moves.allSatisfy { a[$0.from] == c[$0.to] })
        #expect(composed.moves.allSatisfy { composed.deletions.contains($0.from) && composed.insertions.contains($0.to) })
        // A survivor of both steps modified in either step is a modification.
        let survivors = Set(a).intersection(c)
        for index in composed.modifications { #expect(survivors.contains(a[index])) }
        #expect(Set(composed.modifications).isDisjoint(with: composed.deletions))
    }

    @Test func modificationsNewMapsAcrossDeletionsAndInsertions() {
        // old: a b c d e; delete b, insert x at 0 and y at 3: x a c y d e; c and e modified.
        let change = CollectionChange<String>.update(
            ResultsSnapshot(tree: OrderedTree(order: SortOrder(terms: []))),
            deletions: [1], insertions: [0, 3], modifications: [2, 4])
        #expect(change.modificationsNew == [2, 5])
    }

    /// Realm's examples: [1,2,3] → [2,3,1] is one move, of the row whose key changed.
    @Test func oneMoveSufficesAndTheChangedRowMoves() {
        let moved = ChangesetBuilder.diff(old: [1, 2, 3] as [Int64], new: [2, 3, 1]) { ChangesetBuilder.RowFacts(keyChanged: $0 == 1, modified: $0 == 1) }
        #expect(moved.deletions == [0] && moved.insertions == [2] && moved.moves == [Changeset.Move(from: 0, to: 2)])
        // Two rows swap; only one needs to move, and it is the one whose key changed.
        let swapped = ChangesetBuilder.diff(old: [1, 2] as [Int64], new: [2, 1]) { ChangesetBuilder.RowFacts(keyChanged: $0 == 2, modified: $0 == 2) }
        #expect(swapped.moves == [Changeset.Move(from: 1, to: 0)])
    }

    static func longestCommonSubsequence(_ a: [Int64], _ b: [Int64]) -> Int {
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0..<a.count {
            for j in 0..<b.count {
                table[i + 1][j + 1] = a[i] == b[j] ? table[i][j] + 1 : max(table[i][j + 1], table[i + 1][j])
            }
        }
        return table[a.count][b.count]
    }
}

/// A deterministic generator for tests: the demo data's SplitMix64, with a bound.
struct SeededRandom: RandomNumberGenerator {
    private var base: SplitMix64
    init(seed: UInt64) { base = SplitMix64(seed: seed &* 0x9E37_79B9_7F4A_7C15 &+ 1) }
    mutating func next() -> UInt64 { base.next() }
    mutating func next(_ bound: Int) -> Int { bound <= 0 ? 0 : Int(next() % UInt64(bound)) }
}

extension ResultsSnapshot {
    /// A snapshot of a tree's elements, in order (held in memory).
    init(tree: OrderedTree<Element>) {
        var elements: [Element] = []
        tree.forEach { _, element in elements.append(element) }
        self.init(elements: elements)
    }
}
