/// Which rows of a commit are the same rows, for a table whose identity is
/// the rowid (no declared primary key other than an INTEGER PRIMARY KEY).
///
/// A rowid can change while the row does not: `VACUUM` renumbers a table
/// without an INTEGER PRIMARY KEY, and `UPDATE t SET rowid = ...` moves
/// rows. Paired by rowid alone, such a commit looks like rows deleted and
/// others inserted (or modified in place) although the result is the same.
/// So the rows that changed are paired by their values first (a row with
/// exactly the values of one gone is that row, renumbered), preferring the
/// same rowid; then the rest by rowid (a modification); what remains is
/// deleted or inserted. With an INTEGER PRIMARY KEY the rowid is a value,
/// so this pairs exactly as the rowid does.
enum RowPairing {
    /// A changed row: its rowid and the hash of its values (`QueryPlan.contentHash`).
    struct Row {
        var rowID: Int64
        var content: Int
    }

    /// For each of `new`, the index in `old` of the row it is, or nil (an insertion).
    ///
    /// - Complexity: O(k) for k rows.
    static func pair(old: [Row], new: [Row]) -> [Int?] {
        // Only old rows whose values some new row has can pair by values
        // (a commit that changes every row keeps no list per row).
        let newContents = Set(new.lazy.map(\.content))
        var byContent: [Int: [Int]] = [:]
        var byRowID: [Int64: Int] = [:]
        byRowID.reserveCapacity(old.count)
        for (index, row) in old.enumerated() {
            if newContents.contains(row.content) { byContent[row.content, default: []].append(index) }
            byRowID[row.rowID] = index
        }
        var used = [Bool](repeating: false, count: old.count)
        var cursors: [Int: Int] = [:]
        var paired = [Int?](repeating: nil, count: new.count)
        // The same values, at the same rowid when there is one.
        for (offset, row) in new.enumerated() {
            if let same = byRowID[row.rowID], !used[same], old[same].content == row.content {
                used[same] = true
                paired[offset] = same
                continue
            }
            guard let candidates = byContent[row.content] else { continue }
            var cursor = cursors[row.content, default: 0]
            while cursor < candidates.count, used[candidates[cursor]] { cursor += 1 }
            cursors[row.content] = cursor
            guard cursor < candidates.count else { continue }
            used[candidates[cursor]] = true
            paired[offset] = candidates[cursor]
        }
        // The same rowid, other values: a modification.
        for (offset, row) in new.enumerated() where paired[offset] == nil {
            guard let same = byRowID[row.rowID], !used[same] else { continue }
            used[same] = true
            paired[offset] = same
        }
        return paired
    }
}
