/// How a live query re-reads its whole result after a commit it cannot apply row by row
/// (many rows changed, an unknown change, a new plan), and diffs it with the one held.
extension LiveQuery {
    // MARK: - Re-query and diff: O(n + w log w), changed rows decoded

    /// Re-reads the whole result and diffs it with the one held.
    ///
    /// Memory: besides the old and new states (the tree and `LiveRows`
    /// each), only the two orders of identities and, for rows whose
    /// identity is not their rowid (a declared key, a renumbered row), a
    /// map from identity to rowid: no per-row copies of the states, so one
    /// commit that changes every row costs an observer little more than
    /// twice what it holds.
    func applyByRequery(_ db: Database, _ pin: ReadPin?, detaching: Bool = false) throws -> Changeset {
        let oldRows = rows
        // Rows whose values are all as they were are not decoded again.
        let (newTree, states) = try fetchAll(db, old: oldRows)
        var oldKeys: [RowIdentity: Int64] = [:]
        var newKeys: [RowIdentity: Int64] = [:]
        let oldOrder = Self.order(of: tree, oldRows, keys: &oldKeys)
        var newOrder = Self.order(of: newTree, states, keys: &newKeys)
        if plan.identityColumns == nil {
            newOrder = Self.pairedByValues(old: oldOrder, oldRows, new: newOrder, states, remapped: &newKeys)
        }
        if materialized != nil {
            for rowID in oldRows.rowIDs where states[rowID] == nil { materialized?[rowID] = nil }
        }
        let changed = oldRows.rowIDs.filter { states[$0]?.content != oldRows[$0]?.content }
        carryStates(changed: changed, to: pin, detaching: detaching)
        let plan = self.plan
        let extraTerm = sectionValue != nil
        let changeset = ChangesetBuilder.diff(old: oldOrder, new: newOrder) { identity in
            guard let old = Self.state(identity, in: oldRows, keys: oldKeys), let new = Self.state(identity, in: states, keys: newKeys) else { return .init() }
            // A positional key (no Swift order) says nothing of the row's own values.
            return .init(keyChanged: plan.sortOrder != nil && plan.ownSortValuesChanged(old, new, extraTerm: extraTerm),
                         modified: old.fingerprint != new.fingerprint)
        }
        // Rebuild even when nothing is reported: with keyPaths, sort keys and
        // unobserved columns may change without a reported modification.
        tree = newTree
        rows = states
        return changeset
    }

    /// The identities of `tree`'s rows in order; `keys` gets the rowid of
    /// each one whose identity is not its rowid (a declared key).
    private static func order(of tree: OrderedTree<Void>, _ states: LiveRows, keys: inout [RowIdentity: Int64]) -> [RowIdentity] {
        var order: [RowIdentity] = []
        order.reserveCapacity(tree.count)
        tree.forEach { key, _ in
            guard let identity = states[key.rowID]?.key_identity else { return order.append(.rowID(key.rowID)) }
            order.append(identity)
            keys[identity] = key.rowID
        }
        return order
    }

    /// The state of the row with `identity`: found through `keys`, or at its rowid.
    private static func state(_ identity: RowIdentity, in states: LiveRows, keys: [RowIdentity: Int64]) -> LiveRowState? {
        if let rowID = keys[identity] { return states[rowID] }
        switch identity {
        case .rowID(let rowID), .newAt(let rowID): return states[rowID]
        case .key: return nil
        }
    }

    /// Where the rowid is the identity, the new state's identities with the
    /// rows that changed paired by their values first (`RowPairing`): a row
    /// renumbered keeps its old identity; a row at a rowid whose old row
    /// went elsewhere is a new one there (`.newAt`). `remapped` gets the
    /// rowid of each identity that is not the new row's own.
    ///
    /// - Complexity: O(n).
    static func pairedByValues(old oldOrder: [RowIdentity], _ oldRows: LiveRows, new newOrder: [RowIdentity], _ newRows: LiveRows,
                               remapped: inout [RowIdentity: Int64]) -> [RowIdentity] {
        // Changed rows that may pair otherwise than by their rowid: those whose values the
        // other side has, and the rows at their rowids on the other side. The others keep
        // their rowid as identity (a commit that changes every row's values pairs nothing).
        func changedContents(_ order: [RowIdentity], _ rows: LiveRows, _ other: LiveRows) -> Set<Int> {
            var contents = Set<Int>()
            for case .rowID(let rowID) in order {
                if let state = rows[rowID], other[rowID]?.content != state.content { contents.insert(state.content) }
            }
            return contents
        }
        let oldContents = changedContents(oldOrder, oldRows, newRows)
        let newContents = changedContents(newOrder, newRows, oldRows)
        var candidates = Set<Int64>()
        for (order, rows, other) in [(oldOrder, oldRows, newContents), (newOrder, newRows, oldContents)] {
            for case .rowID(let rowID) in order {
                if let content = rows[rowID]?.content, other.contains(content) { candidates.insert(rowID) }
            }
        }
        var olds: [RowPairing.Row] = []
        var oldIdentities: [RowIdentity] = []
        for identity in oldOrder {
            guard case .rowID(let rowID) = identity, candidates.contains(rowID), let state = oldRows[rowID], newRows[rowID]?.content != state.content else { continue }
            olds.append(RowPairing.Row(rowID: rowID, content: state.content))
            oldIdentities.append(identity)
        }
        var news: [RowPairing.Row] = []
        var newOffsets: [Int] = []
        for (offset, identity) in newOrder.enumerated() {
            guard case .rowID(let rowID) = identity, candidates.contains(rowID), let state = newRows[rowID], oldRows[rowID]?.content != state.content else { continue }
            news.append(RowPairing.Row(rowID: rowID, content: state.content))
            newOffsets.append(offset)
        }
        guard !olds.isEmpty, !news.isEmpty else { return newOrder }
        var order = newOrder
        let paired = RowPairing.pair(old: olds, new: news)
        for (index, offset) in newOffsets.enumerated() {
            let rowID = news[index].rowID
            let identity = paired[index].map { oldIdentities[$0] } ?? (oldRows[rowID] != nil ? .newAt(rowID) : .rowID(rowID))
            order[offset] = identity
            if case .rowID(let oldRowID) = identity, oldRowID != rowID { remapped[identity] = rowID }
        }
        return order
    }
}
