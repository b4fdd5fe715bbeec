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
/// It works on runs (rows contiguous in both orders, which a block never
/// splits), so a long result with a few moved rows costs as little as a
/// short one: O(r²) for r runs in the worst case, so only up to `runLimit`
/// runs and `changedLimit` changed rows; beyond, the heaviest increasing
/// subsequence's choice stands.
enum RealmMoves {
    static var runLimit: Int { 512 }
    static var changedLimit: Int { 4_096 }

    /// Which items stay, or nil when there are too many.
    static func stays(items: [ChangesetBuilder.Run], oldRanks: [Int]) -> [Bool]? {
        let count = items.count
        guard count > 1, count <= runLimit else { return nil }
        // Items are in the new order: each one's first row there, and the
        // rows that changed (by their index in the new order), sorted.
        var newStart: [Int] = []
        newStart.reserveCapacity(count + 1)
        var rows = 0
        var changedRows: [Int] = []
        for item in items {
            newStart.append(rows)
            if item.weight.keyUnchanged < item.length {
                // Some row of the run changed its sort key: count them all.
                changedRows.append(contentsOf: rows..<(rows + item.length))
            } else {
                changedRows.append(contentsOf: item.modified.map { rows + $0 - item.old })
            }
            guard changedRows.count <= changedLimit else { return nil }
            rows += item.length
        }
        newStart.append(rows)
        changedRows.sort()
        // `a`: the items in the old order (their index in the new order), and each one's first row there.
        let a = items.indices.sorted { oldRanks[$0] < oldRanks[$1] }
        var oldStart: [Int] = []
        oldStart.reserveCapacity(count + 1)
        var oldRows = 0
        for index in a {
            oldStart.append(oldRows)
            oldRows += items[index].length
        }
        oldStart.append(oldRows)

        /// Changed rows among new row indices `lower..<upper` (none when the range is empty or starts below 0).
        func changedCount(_ lower: Int, _ upper: Int) -> Int {
            guard lower >= 0, lower < upper else { return 0 }
            func firstIndex(atLeast value: Int) -> Int {
                var low = 0, high = changedRows.count
                while low < high {
                    let middle = (low + high) / 2
                    if changedRows[middle] < value { low = middle + 1 } else { high = middle }
                }
                return low
            }
            return firstIndex(atLeast: upper) - firstIndex(atLeast: lower)
        }

        /// A block: items `i..<i+items` of `a`, items `k..<k+items` of the new order, `size` rows.
        struct Match { var i: Int, k: Int, items: Int, size: Int, changed: Int? }
        func longestMatch(_ begin1: Int, _ end1: Int, _ begin2: Int, _ end2: Int) -> Match {
            var best = Match(i: begin1, k: begin2, items: 0, size: 0, changed: nil)
            var previous: (k: Int, items: Int, size: Int)?
            for i in begin1..<end1 {
                let k = a[i]
                guard k >= begin2, k < end2 else { previous = nil; continue }
                let extends = previous.map { $0.k + 1 == k } ?? false
                let length = items[k].length
                let block = (items: extends ? (previous?.items ?? 0) + 1 : 1, size: extends ? (previous?.size ?? 0) + length : length)
                previous = (k, block.items, block.size)
                let start = Match(i: i - block.items + 1, k: k - block.items + 1, items: block.items, size: block.size, changed: nil)
                if block.size > best.size {
                    best = start
                } else if block.size == best.size {
                    // As realm-core counts them (in rows): the best block's by
                    // the range ending at its first row, this one's by its own.
                    let bestFirst = newStart[best.k]
                    let bestChanged = best.changed ?? changedCount(bestFirst - block.size + 1, bestFirst + 1)
                    best.changed = bestChanged
                    let last = newStart[k] + length - 1
                    let changed = changedCount(last - block.size + 1, last + 1)
                    if changed < bestChanged {
                        best = start
                        best.changed = changed
                    }
                }
            }
            return best
        }
        var stays = [Bool](repeating: false, count: count)
        var pending = [(0, count, 0, count)]
        // realm-core recurses left, records, then recurses right; the kept
        // set does not depend on the order, so a stack does.
        while let (begin1, end1, begin2, end2) = pending.popLast() {
            guard begin1 < end1, begin2 < end2 else { continue }
            let match = longestMatch(begin1, end1, begin2, end2)
            guard match.size > 0 else { continue }
            if match.i > begin1, match.k > begin2 { pending.append((begin1, match.i, begin2, match.k)) }
            for offset in 0..<match.items { stays[a[match.i + offset]] = true }
            // realm-core compares both ends with the new range's end, in rows.
            let end2Row = newStart[end2]
            if oldStart[match.i + match.items] < end2Row, newStart[match.k + match.items] < end2Row {
                pending.append((match.i + match.items, end1, match.k + match.items, end2))
            }
        }
        return stays
    }
}
