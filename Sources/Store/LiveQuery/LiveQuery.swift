/// Keeps one query's result up to date across commits, and says how each
/// commit changed it.
///
/// Used only on the observation queue (or, while it is being built for an
/// immediate first result, on the reader's queue).
final class LiveQuery<Element> {
    typealias Decode = (StatementDecoder) throws -> Element

    struct RowState {
        var key: SortKey
        var fingerprint: Int
        /// The declared key, for tables whose identity is not the rowid.
        var key_identity: RowIdentity?

        func identity(_ rowID: Int64) -> RowIdentity { key_identity ?? .rowID(rowID) }
    }

    private(set) var plan: QueryPlan
    private let decode: Decode
    private var tree: OrderedTree<Element>
    private var rows: [Int64: RowState] = [:]

    /// Reads the whole result.
    init(plan: QueryPlan, decode: @escaping Decode, db: Database) throws {
        self.plan = plan
        self.decode = decode
        tree = OrderedTree(order: plan.sortOrder ?? SortOrder(terms: []))
        let (entries, states) = try fetchAll(db)
        tree = OrderedTree(order: plan.sortOrder ?? SortOrder(terms: []), sorted: entries)
        rows = states
    }

    var snapshot: ResultsSnapshot<Element> { ResultsSnapshot(tree: tree) }
    var count: Int { tree.count }

    private func state(_ statement: Statement) -> RowState {
        let key = plan.sortKey(of: statement)
        return RowState(key: key, fingerprint: plan.fingerprint(of: statement),
                        key_identity: plan.identityColumns == nil ? nil : plan.identity(of: statement, key: key))
    }

    private func fetchAll(_ db: Database) throws -> ([(key: SortKey, element: Element)], [Int64: RowState]) {
        let statement = try db.connection.cachedStatement(sql: plan.fullSQL)
        defer { statement.reset() }
        try statement.bind(plan.fullArguments)
        let decoder = StatementDecoder(statement: statement, tableName: plan.table.name)
        var entries: [(key: SortKey, element: Element)] = []
        var states: [Int64: RowState] = [:]
        while try statement.step() {
            let state = state(statement)
            entries.append((state.key, try decode(decoder)))
            states[state.key.rowID] = state
        }
        return (entries, states)
    }

    /// Applies a commit's changes to this query's table.
    ///
    /// - Returns: the changeset, or nil when the result did not change.
    func apply(_ change: ChangedRows.TableChange, db: Database) throws -> Changeset? {
        let changeset: Changeset
        if case .rows(let changed) = change, plan.isIncremental, changed.count <= max(64, tree.count / 4) {
            changeset = try applyIncrementally(changed, db)
        } else {
            changeset = try applyByRequery(db)
        }
        return changeset.isEmpty ? nil : changeset
    }

    /// Switches to a new plan (the schema changed) and re-reads the result.
    func replan(_ plan: QueryPlan, db: Database) throws -> Changeset? {
        self.plan = plan
        let changeset = try applyByRequery(db)
        return changeset.isEmpty ? nil : changeset
    }

    // MARK: - Re-query and diff: O(n + w log w)

    private func applyByRequery(_ db: Database) throws -> Changeset {
        let oldRows = rows
        var oldOrder: [RowIdentity] = []
        oldOrder.reserveCapacity(tree.count)
        var oldByIdentity: [RowIdentity: RowState] = [:]
        oldByIdentity.reserveCapacity(tree.count)
        tree.forEach { key, _ in
            guard let state = oldRows[key.rowID] else { return }
            let identity = state.identity(key.rowID)
            oldOrder.append(identity)
            oldByIdentity[identity] = state
        }
        let (entries, states) = try fetchAll(db)
        var newOrder: [RowIdentity] = []
        newOrder.reserveCapacity(entries.count)
        var newByIdentity: [RowIdentity: RowState] = [:]
        newByIdentity.reserveCapacity(entries.count)
        for entry in entries {
            guard let state = states[entry.key.rowID] else { continue }
            let identity = state.identity(entry.key.rowID)
            newOrder.append(identity)
            newByIdentity[identity] = state
        }
        let changeset = ChangesetBuilder.diff(old: oldOrder, new: newOrder) { identity in
            guard let old = oldByIdentity[identity], let new = newByIdentity[identity] else { return .init() }
            return .init(keyChanged: !old.key.hasSameValues(as: new.key), modified: old.fingerprint != new.fingerprint)
        }
        // Rebuild even when nothing is reported: with keyPaths, sort keys and
        // unobserved columns may change without a reported modification.
        tree = OrderedTree(order: plan.sortOrder ?? SortOrder(terms: []), sorted: entries)
        rows = states
        return changeset
    }

    // MARK: - Incremental: O(k log n) for k changed rows

    private struct Change {
        var old: (rowID: Int64, state: RowState)?
        var new: (rowID: Int64, state: RowState, element: Element)?
        var oldIndex = 0
        var newIndex = 0
        var identity: RowIdentity {
            if let old { return old.state.identity(old.rowID) }
            if let new { return new.state.identity(new.rowID) }
            return .rowID(0)
        }
        var keyChanged: Bool {
            guard let old, let new else { return false }
            return !old.state.key.hasSameValues(as: new.state.key)
        }
        var modified: Bool {
            guard let old, let new else { return false }
            return old.state.fingerprint != new.state.fingerprint
        }
        /// Whether the row may not be where it was among the others.
        var changesPosition: Bool { old == nil || new == nil || keyChanged }
    }

    private func applyIncrementally(_ changed: Set<Int64>, _ db: Database) throws -> Changeset {
        let statement = try db.connection.cachedStatement(sql: plan.pointSQL)
        defer { statement.reset() }
        let decoder = StatementDecoder(statement: statement, tableName: plan.table.name)
        var changes: [Change] = []
        var vanished: [RowIdentity: Int] = [:]    // identity -> index in changes, for rows only in the old state
        var appeared: [Change] = []
        for rowID in changed.sorted() {
            statement.reset()
            try statement.bind([.integer(rowID)] + plan.pointArguments)
            let old = rows[rowID].map { (rowID, $0) }
            var new: (rowID: Int64, state: RowState, element: Element)?
            if try statement.step() {
                new = (rowID, state(statement), try decode(decoder))
            }
            switch (old, new) {
            case (nil, nil): continue
            case (let old?, let new?) where old.1.identity(rowID) != new.state.identity(rowID):
                // The declared key changed: another row, as far as identity goes.
                vanished[old.1.identity(rowID)] = changes.count
                changes.append(Change(old: old, new: nil))
                appeared.append(Change(old: nil, new: new))
            case (let old?, nil):
                vanished[old.1.identity(rowID)] = changes.count
                changes.append(Change(old: old, new: nil))
            case (nil, let new?):
                appeared.append(Change(old: nil, new: new))
            case (let old?, let new?):
                changes.append(Change(old: old, new: new))
            }
        }
        // A row deleted and another inserted with the same declared key is one row.
        for change in appeared {
            if plan.identityColumns != nil, let index = vanished.removeValue(forKey: change.identity) {
                changes[index].new = change.new
            } else {
                changes.append(change)
            }
        }

        let oldTree = tree
        let oldCount = tree.count
        for index in changes.indices {
            if let old = changes[index].old { changes[index].oldIndex = tree.rank(of: old.state.key) }
        }
        // Remove rows that leave or move, insert rows that enter or move, replace the rest.
        for change in changes {
            guard let old = change.old else { continue }
            if let new = change.new, new.state.key == old.state.key { continue }
            tree.remove(key: old.state.key)
            rows[old.rowID] = nil
        }
        for change in changes {
            guard let new = change.new else { continue }
            if let old = change.old, new.state.key == old.state.key {
                tree.replace(new.element, key: new.state.key)
            } else {
                tree.insert(new.element, key: new.state.key)
            }
            rows[new.rowID] = new.state
        }
        var positionChanging = 0
        var keyChanges = 0
        for index in changes.indices {
            if let new = changes[index].new { changes[index].newIndex = tree.rank(of: new.state.key) }
            if changes[index].changesPosition { positionChanging += 1 }
            if changes[index].keyChanged { keyChanges += 1 }
        }
        guard positionChanging > 0 || changes.contains(where: \.modified) else { return Changeset() }

        var changeset = Changeset()
        if keyChanges == 0 {
            // Rows present before and after keep their order: no moves.
            for change in changes {
                if change.old == nil { changeset.insertions.append(change.newIndex) }
                else if change.new == nil { changeset.deletions.append(change.oldIndex) }
                else if change.modified { changeset.modifications.append(change.oldIndex) }
            }
        } else {
            changeset = windowDiff(changes, oldTree: oldTree, oldCount: oldCount)
        }
        changeset.deletions.sort()
        changeset.insertions.sort()
        changeset.modifications.sort()
        return changeset
    }

    /// The changeset of a commit that changed sort keys: the diff of the
    /// span of both results that holds every row not where it was (outside
    /// it, the same rows sit at the same indices), as the re-query path
    /// would compute it.
    private func windowDiff(_ changes: [Change], oldTree: OrderedTree<Element>, oldCount: Int) -> Changeset {
        let newCount = tree.count
        var low = Int.max
        var oldHigh = -1
        var newHigh = -1
        for change in changes where change.changesPosition {
            if change.old != nil { low = min(low, change.oldIndex); oldHigh = max(oldHigh, change.oldIndex) }
            if change.new != nil { low = min(low, change.newIndex); newHigh = max(newHigh, change.newIndex) }
        }
        let suffix = min(oldCount - max(oldHigh + 1, low), newCount - max(newHigh + 1, low))
        let oldEnd = oldCount - suffix
        let newEnd = newCount - suffix

        var byOldRowID: [Int64: Change] = [:]
        var byNewRowID: [Int64: Change] = [:]
        var facts: [RowIdentity: ChangesetBuilder.RowFacts] = [:]
        for change in changes {
            if let old = change.old { byOldRowID[old.rowID] = change }
            if let new = change.new { byNewRowID[new.rowID] = change }
            if change.old != nil, change.new != nil {
                facts[change.identity] = .init(keyChanged: change.keyChanged, modified: change.modified)
            }
        }
        // Rows outside `changes` are the same before and after: `rows` knows them.
        func identities(_ tree: OrderedTree<Element>, _ range: Range<Int>, _ changed: [Int64: Change]) -> [RowIdentity] {
            range.map { index in
                let rowID = tree.entry(at: index).key.rowID
                return changed[rowID]?.identity ?? rows[rowID]?.identity(rowID) ?? .rowID(rowID)
            }
        }
        let oldWindow = identities(oldTree, low..<oldEnd, byOldRowID)
        let newWindow = identities(tree, low..<newEnd, byNewRowID)
        var changeset = ChangesetBuilder.diff(old: oldWindow, new: newWindow) { facts[$0] ?? .init() }
        changeset.deletions = changeset.deletions.map { $0 + low }
        changeset.insertions = changeset.insertions.map { $0 + low }
        changeset.modifications = changeset.modifications.map { $0 + low }
        changeset.moves = changeset.moves.map { Changeset.Move(from: $0.from + low, to: $0.to + low) }
        // Modified rows outside the window stay where they were.
        for change in changes where change.modified && !change.keyChanged && (change.oldIndex < low || change.oldIndex >= oldEnd) {
            changeset.modifications.append(change.oldIndex)
        }
        return changeset
    }
}

// A live query belongs to the observation queue.
@available(*, unavailable)
extension LiveQuery: Sendable {}
