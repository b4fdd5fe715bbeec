/// Keeps one query's result up to date across commits, and says how each
/// commit changed it.
///
/// Used only on the observation queue.
final class LiveQuery<Element> {
    typealias Decode = (StatementDecoder) throws -> Element

    private struct RowState {
        var key: SortKey
        var fingerprint: Int
    }

    private let plan: QueryPlan
    private let decode: Decode
    private var tree: OrderedTree<Element>
    private var rows: [Int64: RowState] = [:]

    /// Reads the whole result.
    init(plan: QueryPlan, decode: @escaping Decode, db: Database) throws {
        self.plan = plan
        self.decode = decode
        tree = OrderedTree(order: plan.sortOrder ?? SortOrder(terms: []))
        try reload(db)
    }

    var snapshot: ResultsSnapshot<Element> { ResultsSnapshot(tree: tree) }
    var count: Int { tree.count }

    private func reload(_ db: Database) throws {
        let (entries, states) = try fetchAll(db)
        tree = OrderedTree(order: plan.sortOrder ?? SortOrder(terms: []), sorted: entries)
        rows = states
    }

    private func fetchAll(_ db: Database) throws -> ([(key: SortKey, element: Element)], [Int64: RowState]) {
        let statement = try db.connection.cachedStatement(sql: plan.fullSQL)
        defer { statement.reset() }
        try statement.bind(plan.fullArguments)
        let decoder = StatementDecoder(statement: statement, tableName: plan.table.name)
        var entries: [(key: SortKey, element: Element)] = []
        var states: [Int64: RowState] = [:]
        while try statement.step() {
            let key = plan.sortKey(of: statement)
            entries.append((key, try decode(decoder)))
            states[key.rowID] = RowState(key: key, fingerprint: plan.fingerprint(of: statement))
        }
        return (entries, states)
    }

    /// Applies a commit. `changed` holds the rowids the commit changed in
    /// this query's table; nil means unknown (another process committed), so
    /// the query is re-run and diffed.
    ///
    /// - Returns: the changeset, or nil when the result did not change.
    func apply(changed: Set<Int64>?, db: Database) throws -> ChangesetBuilder.Changeset? {
        let changeset: ChangesetBuilder.Changeset
        if let changed, plan.isIncremental, changed.count <= max(64, tree.count / 4) {
            changeset = try applyIncrementally(changed, db)
        } else {
            changeset = try applyByRequery(db)
        }
        return changeset.isEmpty ? nil : changeset
    }

    // MARK: - Re-query and keyed diff: O(n log n)

    private func applyByRequery(_ db: Database) throws -> ChangesetBuilder.Changeset {
        var oldOrder: [Int64] = []
        oldOrder.reserveCapacity(tree.count)
        tree.forEach { key, _ in oldOrder.append(key.rowID) }
        let oldRows = rows
        let (entries, states) = try fetchAll(db)
        let newOrder = entries.map(\.key.rowID)
        let changeset = ChangesetBuilder.diff(old: oldOrder, new: newOrder) { rowID in
            oldRows[rowID]?.fingerprint != states[rowID]?.fingerprint
        }
        // Rebuild even when nothing is reported: with keyPaths, sort keys and
        // unobserved columns may change without a reported modification.
        tree = OrderedTree(order: plan.sortOrder ?? SortOrder(terms: []), sorted: entries)
        rows = states
        return changeset
    }

    // MARK: - Incremental: O(k log n) for k changed rows

    private struct Change {
        var rowID: Int64
        var old: RowState?
        var new: (state: RowState, element: Element)?
        var oldIndex = 0
        var newIndex = 0
        var keyChanged: Bool {
            guard let old, let new else { return false }
            return old.key != new.state.key
        }
    }

    private func applyIncrementally(_ changed: Set<Int64>, _ db: Database) throws -> ChangesetBuilder.Changeset {
        let statement = try db.connection.cachedStatement(sql: plan.pointSQL)
        defer { statement.reset() }
        let decoder = StatementDecoder(statement: statement, tableName: plan.table.name)
        var changes: [Change] = []
        for rowID in changed.sorted() {
            statement.reset()
            try statement.bind([.integer(rowID)] + plan.pointArguments)
            var change = Change(rowID: rowID, old: rows[rowID], new: nil)
            if try statement.step() {
                let state = RowState(key: plan.sortKey(of: statement), fingerprint: plan.fingerprint(of: statement))
                change.new = (state, try decode(decoder))
            }
            switch (change.old, change.new) {
            case (nil, nil): continue
            case (let old?, let new?) where old.key == new.state.key && old.fingerprint == new.state.fingerprint:
                // Nothing observed changed; keep the element current all the same.
                tree.replace(new.element, key: new.state.key)
                continue
            default: changes.append(change)
            }
        }
        guard !changes.isEmpty else { return ChangesetBuilder.Changeset() }
        let changedRowIDs = Set(changes.map(\.rowID))

        // Old positions, and old neighbours of rows whose key changes.
        var oldNeighbours: [Int64: (Int64?, Int64?)] = [:]
        for index in changes.indices {
            guard let old = changes[index].old else { continue }
            let position = tree.rank(of: old.key)
            changes[index].oldIndex = position
            if changes[index].keyChanged { oldNeighbours[changes[index].rowID] = neighbours(at: position) }
        }
        // Remove rows that leave or move, insert rows that enter or move, replace modified ones.
        for change in changes where change.old != nil && (change.new == nil || change.keyChanged) {
            if let old = change.old { tree.remove(key: old.key) }
        }
        for change in changes where change.new != nil && (change.old == nil || change.keyChanged) {
            if let new = change.new { tree.insert(new.element, key: new.state.key) }
        }
        for change in changes where change.old != nil && change.new != nil && !change.keyChanged {
            if let new = change.new { tree.replace(new.element, key: new.state.key) }
        }
        var changeset = ChangesetBuilder.Changeset()
        for index in changes.indices {
            let change = changes[index]
            if let new = change.new {
                rows[change.rowID] = new.state
                changes[index].newIndex = tree.rank(of: new.state.key)
            } else {
                rows[change.rowID] = nil
            }
            let newIndex = changes[index].newIndex
            switch (change.old, change.new) {
            case (nil, _?):
                changeset.insertions.append(newIndex)
            case (_?, nil):
                changeset.deletions.append(change.oldIndex)
            case (_?, _?) where change.keyChanged:
                // A new sort key moves the row, unless it stays between the
                // same two rows and neither of them changed: then every
                // unchanged row stays on the same side of it.
                if let before = oldNeighbours[change.rowID], before == neighbours(at: newIndex),
                   !(before.0.map(changedRowIDs.contains) ?? false), !(before.1.map(changedRowIDs.contains) ?? false) {
                    changeset.modifications.append(change.oldIndex)
                } else {
                    changeset.deletions.append(change.oldIndex)
                    changeset.insertions.append(newIndex)
                    changeset.moves.append((change.oldIndex, newIndex))
                }
            default:
                changeset.modifications.append(change.oldIndex)
            }
        }
        changeset.deletions.sort()
        changeset.insertions.sort()
        changeset.modifications.sort()
        changeset.moves.sort { $0.0 < $1.0 }
        return changeset
    }

    private func neighbours(at position: Int) -> (Int64?, Int64?) {
        let before = position > 0 ? tree.entry(at: position - 1).key.rowID : nil
        let after = position + 1 < tree.count ? tree.entry(at: position + 1).key.rowID : nil
        return (before, after)
    }
}

// A live query belongs to the observation queue.
@available(*, unavailable)
extension LiveQuery: Sendable {}
