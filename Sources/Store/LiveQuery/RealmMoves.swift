/// Which rows stay in place when a result is reordered, chosen as
/// realm-core's `calculate_moves_sorted` chooses: the longest block of rows
/// contiguous in both orders stays (the first one found, or among equally
/// long ones the one with fewest changed rows), then the same on each side
/// of it. Realm and Sluice both move as few rows as possible, but when two
/// sets of moves are equally small they pick different rows
/// (`[1, 2, 3] → [1, 3, 2]`: Realm moves 3, the heaviest increasing
/// subsequence alone would move 2); a list animated by a Realm app expects
/// Realm's. `ChangesetBuilder` uses this choice when it keeps as much as
/// its own (Realm's greedy blocks do not always keep the most rows).
///
/// O(w²) in the worst case for w rows, so only for windows of up to
/// `rowLimit` rows; larger ones keep the heaviest increasing subsequence.
enum RealmMoves {
    static var rowLimit: Int { 512 }

    /// Which items stay, or nil when the window is too large or a run
    /// would be split.
    static func stays(items: [ChangesetBuilder.Run], oldRanks: [Int]) -> [Bool]? {
        let rowCount = items.reduce(0) { $0 + $1.length }
        guard rowCount > 1, rowCount <= rowLimit else { return nil }
        // Rows in the new order (items are sorted by new position), each
        // with the item it belongs to; `a` lists, in the old order, each
        // row's index in the new order.
        var itemOfRow: [Int] = []
        var changed: [Bool] = []
        itemOfRow.reserveCapacity(rowCount)
        var firstRowOfItem: [Int] = []
        for (index, item) in items.enumerated() {
            firstRowOfItem.append(itemOfRow.count)
            let modified = Set(item.modified)
            let keyChanged = item.weight.keyUnchanged < item.length
            for offset in 0..<item.length {
                itemOfRow.append(index)
                changed.append(keyChanged || modified.contains(item.old + offset))
            }
        }
        var a: [Int] = []
        a.reserveCapacity(rowCount)
        for index in items.indices.sorted(by: { oldRanks[$0] < oldRanks[$1] }) {
            for offset in 0..<items[index].length { a.append(firstRowOfItem[index] + offset) }
        }
        // Changed rows among new indices below each index.
        var changedBefore = [0]
        for flag in changed { changedBefore.append(changedBefore[changedBefore.count - 1] + (flag ? 1 : 0)) }
        func changedCount(_ lower: Int, _ upper: Int) -> Int {
            guard lower >= 0, lower < upper else { return 0 }
            return changedBefore[min(upper, rowCount)] - changedBefore[lower]
        }

        struct Match { var i: Int, j: Int, size: Int, changed: Int? }
        func longestMatch(_ begin1: Int, _ end1: Int, _ begin2: Int, _ end2: Int) -> Match {
            var best = Match(i: begin1, j: begin2, size: 0, changed: nil)
            var previous: (j: Int, length: Int)?
            for i in begin1..<end1 {
                let j = a[i]
                guard j >= begin2, j < end2 else { previous = nil; continue }
                let size = previous.map { $0.j + 1 == j ? $0.length + 1 : 1 } ?? 1
                previous = (j, size)
                if size > best.size {
                    best = Match(i: i - size + 1, j: j - size + 1, size: size, changed: nil)
                } else if size == best.size {
                    // As realm-core counts them: the best block's by the
                    // range ending at its start, this one's by its own.
                    let bestChanged = best.changed ?? changedCount(best.j - size + 1, best.j + 1)
                    best.changed = bestChanged
                    let count = changedCount(j - size + 1, j + 1)
                    if count < bestChanged { best = Match(i: i - size + 1, j: j - size + 1, size: size, changed: count) }
                }
            }
            return best
        }
        var kept = [Bool](repeating: false, count: rowCount)
        var pending = [(0, rowCount, 0, rowCount)]
        // realm-core recurses left, records, then recurses right; the kept
        // set does not depend on the order, so a stack does.
        while let (begin1, end1, begin2, end2) = pending.popLast() {
            guard begin1 < end1 else { continue }
            let match = longestMatch(begin1, end1, begin2, end2)
            guard match.size > 0 else { continue }
            if match.i > begin1, match.j > begin2 { pending.append((begin1, match.i, begin2, match.j)) }
            for i in match.i..<(match.i + match.size) { kept[a[i]] = true }
            // (realm-core compares both ends with end2 here.)
            if match.i + match.size < end2, match.j + match.size < end2 {
                pending.append((match.i + match.size, end1, match.j + match.size, end2))
            }
        }
        var stays = [Bool](repeating: false, count: items.count)
        for (index, item) in items.enumerated() {
            let rows = kept[firstRowOfItem[index]..<(firstRowOfItem[index] + item.length)]
            guard rows.allSatisfy({ $0 }) || rows.allSatisfy({ !$0 }) else { return nil }
            stays[index] = rows.first ?? false
        }
        return stays
    }
}
