/// Computes changesets: a keyed diff of two ordered results (for queries
/// that are re-run), and the composition of two consecutive changesets (for
/// a subscriber that fell behind).
enum ChangesetBuilder {
    struct Changeset: Equatable {
        var deletions: [Int] = []
        var insertions: [Int] = []
        var modifications: [Int] = []
        var moves: [(Int, Int)] = []

        var isEmpty: Bool { deletions.isEmpty && insertions.isEmpty && modifications.isEmpty }

        static func == (lhs: Changeset, rhs: Changeset) -> Bool {
            lhs.deletions == rhs.deletions && lhs.insertions == rhs.insertions
                && lhs.modifications == rhs.modifications
                && lhs.moves.map { [$0.0, $0.1] } == rhs.moves.map { [$0.0, $0.1] }
        }
    }

    /// Diffs two ordered lists of row identities. Rows in both whose relative
    /// order is kept (a longest increasing subsequence of their old
    /// positions) stay; other common rows move; `changed` says whether a
    /// common row's values changed.
    ///
    /// - Complexity: O((n + m) log(n + m)).
    static func diff(old: [Int64], new: [Int64], changed: (Int64) -> Bool) -> Changeset {
        var oldPosition: [Int64: Int] = [:]
        oldPosition.reserveCapacity(old.count)
        for (index, id) in old.enumerated() { oldPosition[id] = index }

        // Common rows in new order, with their old positions.
        var commonNew: [Int] = []           // new indices of common rows
        var commonOld: [Int] = []           // their old indices
        var insertions: [Int] = []
        var present = Set<Int64>()
        present.reserveCapacity(new.count)
        for (index, id) in new.enumerated() {
            present.insert(id)
            if let position = oldPosition[id] {
                commonNew.append(index)
                commonOld.append(position)
            } else {
                insertions.append(index)
            }
        }
        var deletions: [Int] = []
        for (index, id) in old.enumerated() where !present.contains(id) { deletions.append(index) }

        let stays = longestIncreasingSubsequence(commonOld)
        var moves: [(Int, Int)] = []
        var modifications: [Int] = []
        for (offset, oldIndex) in commonOld.enumerated() {
            if stays.contains(offset) {
                if changed(old[oldIndex]) { modifications.append(oldIndex) }
            } else {
                moves.append((oldIndex, commonNew[offset]))
            }
        }
        deletions.append(contentsOf: moves.map(\.0))
        insertions.append(contentsOf: moves.map(\.1))
        deletions.sort()
        insertions.sort()
        modifications.sort()
        moves.sort { $0.0 < $1.0 }
        return Changeset(deletions: deletions, insertions: insertions, modifications: modifications, moves: moves)
    }

    /// The offsets of a longest strictly increasing subsequence (patience sorting).
    static func longestIncreasingSubsequence(_ values: [Int]) -> Set<Int> {
        var tails: [Int] = []            // offsets of the smallest tail of each length
        var previous = [Int](repeating: -1, count: values.count)
        for (offset, value) in values.enumerated() {
            var low = 0, high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[offset] = tails[low - 1] }
            if low == tails.count { tails.append(offset) } else { tails[low] = offset }
        }
        var result = Set<Int>()
        var cursor = tails.last ?? -1
        while cursor >= 0 {
            result.insert(cursor)
            cursor = previous[cursor]
        }
        return result
    }

    /// The single changeset equivalent to `first` (from a result of
    /// `oldCount` rows) followed by `second`.
    ///
    /// - Complexity: O(n) in the sizes of the three results.
    static func compose(_ first: Changeset, _ second: Changeset, oldCount: Int) -> Changeset {
        let midCount = oldCount - first.deletions.count + first.insertions.count
        let newCount = midCount - second.deletions.count + second.insertions.count
        let oldToMid = survivorMap(count: oldCount, deletions: first.deletions, targetCount: midCount, insertions: first.insertions)
        let midToNew = survivorMap(count: midCount, deletions: second.deletions, targetCount: newCount, insertions: second.insertions)
        let firstMoveOrigin = Dictionary(uniqueKeysWithValues: first.moves.map { ($0.1, $0.0) })   // mid -> old
        let secondMoveTarget = Dictionary(uniqueKeysWithValues: second.moves.map { ($0.0, $0.1) })  // mid -> new
        let modified1 = Set(first.modifications)
        let modified2 = Set(second.modifications)

        var deletions: [Int] = []
        var insertions: [Int] = []
        var modifications: [Int] = []
        var moves: [(Int, Int)] = []
        for old in 0..<oldCount {
            guard let mid = oldToMid[old] else {
                deletions.append(old)            // deleted (or moved) by the first step
                continue
            }
            if midToNew[mid] != nil {
                if modified1.contains(old) || modified2.contains(mid) { modifications.append(old) }
            } else {
                deletions.append(old)
                if let to = secondMoveTarget[mid] { moves.append((old, to)) }
            }
        }
        for mid in first.insertions {
            guard let new = midToNew[mid] ?? secondMoveTarget[mid] else { continue }   // deleted by the second step
            insertions.append(new)
            if let origin = firstMoveOrigin[mid] { moves.append((origin, new)) }
        }
        let secondMoveTargets = Set(secondMoveTarget.values)
        for new in second.insertions where !secondMoveTargets.contains(new) { insertions.append(new) }
        // Moves of survivors of the first step are insertions too.
        for (old, to) in moves where oldToMid[old] != nil { insertions.append(to) }
        return Changeset(deletions: deletions.sorted(), insertions: Array(Set(insertions)).sorted(),
                         modifications: modifications.sorted(), moves: moves.sorted { $0.0 < $1.0 })
    }

    /// Where each row of a result lands after a step: the r-th surviving row
    /// takes the r-th slot that is not an insertion.
    private static func survivorMap(count: Int, deletions: [Int], targetCount: Int, insertions: [Int]) -> [Int?] {
        var map = [Int?](repeating: nil, count: count)
        let deleted = Set(deletions)
        let inserted = Set(insertions)
        var slot = 0
        for index in 0..<count where !deleted.contains(index) {
            while slot < targetCount, inserted.contains(slot) { slot += 1 }
            map[index] = slot
            slot += 1
        }
        return map
    }
}
