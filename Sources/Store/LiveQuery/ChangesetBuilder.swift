/// Computes changesets: the diff of two ordered results, and the
/// composition of two consecutive changesets (for a subscriber that fell behind).
///
/// A changeset is a function of the two states and of which rows changed,
/// never of how it was computed: the re-query path (`diff`) and the
/// incremental path (`LiveQuery`) both end in `diffWindow`, on the same
/// window, so they agree to the index.
enum ChangesetBuilder {
    /// What is known of a row present in both states.
    struct RowFacts {
        /// Its ORDER BY values changed.
        var keyChanged = false
        /// Its observed values changed.
        var modified = false
    }

    /// Diffs two ordered lists of row identities. `facts` tells, for a row
    /// in both, whether its sort key and values changed (absent: neither).
    ///
    /// - Complexity: O(n + w log w), w being the span between the first and
    ///   last rows that are not where they were.
    static func diff<ID: Hashable>(old: [ID], new: [ID], facts: (ID) -> RowFacts) -> Changeset {
        var prefix = 0
        while prefix < old.count, prefix < new.count, old[prefix] == new[prefix] { prefix += 1 }
        var suffix = 0
        while suffix < old.count - prefix, suffix < new.count - prefix, old[old.count - 1 - suffix] == new[new.count - 1 - suffix] { suffix += 1 }
        var changeset = diffWindow(old: old[prefix..<(old.count - suffix)], new: new[prefix..<(new.count - suffix)], offset: prefix, facts: facts)
        var aligned: [Int] = []
        for index in 0..<prefix where facts(old[index]).modified { aligned.append(index) }
        for index in (old.count - suffix)..<old.count where facts(old[index]).modified { aligned.append(index) }
        if !aligned.isEmpty {
            changeset.modifications = (changeset.modifications + aligned).sorted()
        }
        return changeset
    }

    /// Diffs a window of both results (the rows before it and after it are
    /// the same rows, in the same places). Rows in both are kept in place
    /// when they form an increasing subsequence; the others move. Among the
    /// largest such subsequences, the one that keeps the most rows whose
    /// sort key did not change, then the most unmodified rows: so a single
    /// changed row is the one that moves, as Realm prefers.
    ///
    /// - Complexity: O(w log w) for a window of w rows.
    static func diffWindow<ID: Hashable>(old: ArraySlice<ID>, new: ArraySlice<ID>, offset: Int, facts: (ID) -> RowFacts) -> Changeset {
        var oldPosition: [ID: Int] = [:]
        oldPosition.reserveCapacity(old.count)
        for (index, id) in old.enumerated() { oldPosition[id] = index }

        var runs: [Run] = []                // the common rows, each a run of one, in new order
        var insertions: [Int] = []
        var present = Set<ID>()
        present.reserveCapacity(new.count)
        for (index, id) in new.enumerated() {
            present.insert(id)
            if let position = oldPosition[id] {
                runs.append(.row(old: position + offset, new: index + offset, facts(id)))
            } else {
                insertions.append(index + offset)
            }
        }
        var deletions: [Int] = []
        for (index, id) in old.enumerated() where !present.contains(id) { deletions.append(index + offset) }
        return diff(runs: runs, deletions: deletions, insertions: insertions)
    }

    /// Rows in both results that are contiguous in both: a run of `length`
    /// rows from `old` to `new` (one row that moves is a run of one).
    struct Run {
        var old: Int
        var new: Int
        var length: Int
        /// The sum of its rows' weights.
        var weight: Weight
        /// Old indices of its rows whose values changed.
        var modified: [Int] = []

        /// One row in both results, weighted by what changed about it.
        static func row(old: Int, new: Int, _ facts: RowFacts) -> Run {
            Run(old: old, new: new, length: 1,
                weight: Weight(kept: 1, keyUnchanged: facts.keyChanged ? 0 : 1, unmodified: facts.modified ? 0 : 1),
                modified: facts.modified ? [old] : [])
        }
    }

    /// The changeset from runs of rows in both results (together covering
    /// them, in any order), `deletions` (rows only in the old result) and
    /// `insertions` (only in the new one): `diffWindow` with each run as one
    /// item, which keeps or moves a run as a whole exactly as `diffWindow`
    /// would (nothing else sits between a run's rows in either result).
    ///
    /// - Complexity: O(r log r) for r runs, plus the size of the changeset.
    static func diff(runs: [Run], deletions: [Int], insertions: [Int]) -> Changeset {
        let items = runs.sorted { $0.new < $1.new }
        var oldRanks = [Int](repeating: 0, count: items.count)
        for (rank, index) in items.indices.sorted(by: { items[$0].old < items[$1].old }).enumerated() { oldRanks[index] = rank }
        var stays = heaviestIncreasingSubsequence(oldRanks, weights: items.map(\.weight), valueCount: items.count)
        if let realm = RealmMoves.stays(items: items, oldRanks: oldRanks) {
            // Realm's choice, when it keeps as much as the heaviest one.
            let weight = { (kept: [Bool]) in zip(items, kept).reduce(Weight()) { $1.1 ? $0 + $1.0.weight : $0 } }
            if weight(realm) == weight(stays) { stays = realm }
        }
        var deletions = deletions
        var insertions = insertions
        var modifications: [Int] = []
        var moves: [Changeset.Move] = []
        for (index, item) in items.enumerated() {
            if stays[index] {
                modifications.append(contentsOf: item.modified)
            } else {
                for offset in 0..<item.length { moves.append(Changeset.Move(from: item.old + offset, to: item.new + offset)) }
            }
        }
        deletions.append(contentsOf: moves.map(\.from))
        insertions.append(contentsOf: moves.map(\.to))
        deletions.sort()
        insertions.sort()
        modifications.sort()
        moves.sort { $0.from < $1.from }
        return Changeset(deletions: deletions, insertions: insertions, modifications: modifications, moves: moves)
    }

    /// What keeping a row in place is worth, compared in this order.
    struct Weight: Comparable {
        var kept = 0
        var keyUnchanged = 0
        var unmodified = 0

        static func + (a: Weight, b: Weight) -> Weight {
            Weight(kept: a.kept + b.kept, keyUnchanged: a.keyUnchanged + b.keyUnchanged, unmodified: a.unmodified + b.unmodified)
        }

        static func < (a: Weight, b: Weight) -> Bool {
            (a.kept, a.keyUnchanged, a.unmodified) < (b.kept, b.keyUnchanged, b.unmodified)
        }
    }

    /// Which items form the heaviest strictly increasing subsequence of
    /// `values` (each in 0..<valueCount). Ties go to the earliest predecessor.
    ///
    /// - Complexity: O(n log valueCount), with a Fenwick tree of prefix maxima.
    static func heaviestIncreasingSubsequence(_ values: [Int], weights: [Weight], valueCount: Int) -> [Bool] {
        var tree = [(weight: Weight, item: Int)](repeating: (Weight(), -1), count: valueCount + 1)
        var best = [Weight](repeating: Weight(), count: values.count)
        var previous = [Int](repeating: -1, count: values.count)
        func better(_ a: (weight: Weight, item: Int), than b: (weight: Weight, item: Int)) -> Bool {
            a.weight > b.weight || (a.weight == b.weight && a.item >= 0 && (b.item < 0 || a.item < b.item))
        }
        for (item, value) in values.enumerated() {
            // The best chain ending below `value`.
            var found: (weight: Weight, item: Int) = (Weight(), -1)
            var index = value
            while index > 0 {
                if better(tree[index], than: found) { found = tree[index] }
                index -= index & -index
            }
            best[item] = found.weight + weights[item]
            previous[item] = found.item
            index = value + 1
            let entry = (weight: best[item], item: item)
            while index <= valueCount {
                if better(entry, than: tree[index]) { tree[index] = entry }
                index += index & -index
            }
        }
        var stays = [Bool](repeating: false, count: values.count)
        var cursor = -1
        var top = Weight()
        for item in values.indices where cursor < 0 || best[item] > top {
            top = best[item]
            cursor = item
        }
        while cursor >= 0 {
            stays[cursor] = true
            cursor = previous[cursor]
        }
        return stays
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
        let firstMoveOrigin = Dictionary(uniqueKeysWithValues: first.moves.map { ($0.to, $0.from) })    // mid -> old
        let secondMoveTarget = Dictionary(uniqueKeysWithValues: second.moves.map { ($0.from, $0.to) })  // mid -> new
        let modified1 = Set(first.modifications)
        let modified2 = Set(second.modifications)

        var deletions: [Int] = []
        var insertions: [Int] = []
        var modifications: [Int] = []
        var moves: [Changeset.Move] = []
        for old in 0..<oldCount {
            guard let mid = oldToMid[old] else {
                deletions.append(old)            // deleted (or moved) by the first step
                continue
            }
            if midToNew[mid] != nil {
                if modified1.contains(old) || modified2.contains(mid) { modifications.append(old) }
            } else {
                deletions.append(old)
                if let to = secondMoveTarget[mid] { moves.append(Changeset.Move(from: old, to: to)) }
            }
        }
        for mid in first.insertions {
            guard let new = midToNew[mid] ?? secondMoveTarget[mid] else { continue }   // deleted by the second step
            insertions.append(new)
            if let origin = firstMoveOrigin[mid] { moves.append(Changeset.Move(from: origin, to: new)) }
        }
        let secondMoveTargets = Set(secondMoveTarget.values)
        for new in second.insertions where !secondMoveTargets.contains(new) { insertions.append(new) }
        // Moves of survivors of the first step are insertions too.
        for move in moves where oldToMid[move.from] != nil { insertions.append(move.to) }
        return Changeset(deletions: deletions.sorted(), insertions: Array(Set(insertions)).sorted(),
                         modifications: modifications.sorted(), moves: moves.sorted { $0.from < $1.from })
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
