
/// How a commit becomes a changeset: finding the changed rows, then either re-querying
/// and diffing (`LiveQuery+Requery.swift`), or applying the changed rows to the tree one by one.
extension LiveQuery {
    // MARK: - Finding changed rows: O(n), nothing decoded

    /// The rows that entered, left or changed since the last state, found by
    /// scanning the query's rows unsorted and comparing each one's hash with
    /// the one held; nil when more than `incrementalLimit` changed.
    func changedRows(_ db: Database) throws -> Set<Int64>? {
        let plan = self.plan
        let statement = try db.cachedStatement(sql: plan.scanSQL)
        defer { statement.reset() }
        try statement.bind(plan.scanArguments)
        let limit = incrementalLimit
        var changed = Set<Int64>()
        var scanned: [Int64] = []
        scanned.reserveCapacity(rows.count + 16)
        var held = 0
        while try statement.step() {
            let rowID = statement.int64(at: 0)
            scanned.append(rowID)
            if let content = rows[rowID]?.content {
                held += 1
                guard content != plan.contentHash(of: statement) else { continue }
            }
            changed.insert(rowID)
            if changed.count > limit { return nil }
        }
        if held < rows.count {
            // Some rows held are gone: the ones the scan did not see.
            let seen = Set(scanned)
            for rowID in rows.rowIDs where !seen.contains(rowID) {
                changed.insert(rowID)
                if changed.count > limit { return nil }
            }
        }
        return changed
    }

    /// Switches to a new plan (the schema changed) and re-reads the result.
    func replan(_ plan: QueryPlan, db: Database, pin: ReadPin?) throws -> Changeset? {
        self.plan = plan
        let position = window?.position
        let changeset: Changeset
        if let window {
            // A window reads with the new plan's columns and order, and counts again.
            self.window?.sql = try WindowSQL(plan: plan, filter: window.filter, orderBy: window.orderBy, db: db)
            changeset = try rereadWindow(db, pin, detaching: true)
        } else {
            changeset = try applyByRequery(db, pin, detaching: true)
        }
        source = Self.source(plan, decode)
        return changeset.isEmpty && window?.position == position ? nil : changeset
    }

    /// Where the rowid is the identity, the incremental path's changes with
    /// their rows paired by values first (`RowPairing`).
    static func pairedByValues(_ changes: [Change]) -> [Change] {
        let olds = changes.compactMap(\.old)
        let news = changes.compactMap(\.new)
        guard !olds.isEmpty, !news.isEmpty else { return changes }
        let paired = RowPairing.pair(old: olds.map { RowPairing.Row(rowID: $0.rowID, content: $0.state.content) },
                                     new: news.map { RowPairing.Row(rowID: $0.rowID, content: $0.state.content) })
        var used = [Bool](repeating: false, count: olds.count)
        var result: [Change] = []
        result.reserveCapacity(changes.count)
        for (index, new) in news.enumerated() {
            if let old = paired[index] {
                used[old] = true
                result.append(Change(old: olds[old], new: new))
            } else {
                result.append(Change(old: nil, new: new))
            }
        }
        for (index, old) in olds.enumerated() where !used[index] { result.append(Change(old: old, new: nil)) }
        return result
    }

    // MARK: - Incremental: O(k log n) for k changed rows

    struct Change {
        var old: (rowID: Int64, state: RowState)?
        var new: (rowID: Int64, state: RowState, element: Element)?
        var oldIndex = 0
        var newIndex = 0
        var identity: RowIdentity {
            if let old { return old.state.identity(old.rowID) }
            if let new { return new.state.identity(new.rowID) }
            return .rowID(0)
        }
        /// Whether its own sort values changed, when the key's values say
        /// more than that (a score that drifts with the index's statistics).
        var ownKeyChanged: Bool?
        /// Its sort values changed, or its rowid (which breaks ties): it may have moved.
        var keyChanged: Bool {
            guard let old, let new else { return false }
            if let ownKeyChanged { return ownKeyChanged }
            return old.rowID != new.rowID || !old.state.key.hasSameValues(as: new.state.key)
        }
        var modified: Bool {
            guard let old, let new else { return false }
            return old.state.fingerprint != new.state.fingerprint
        }
        /// Whether the row may not be where it was among the others.
        var changesPosition: Bool { old == nil || new == nil || keyChanged || mayMove }
        /// Whether it may have moved though its own values did not say so.
        var mayMove = false
    }

    func applyIncrementally(_ changed: Set<Int64>, _ db: Database, _ pin: ReadPin?) throws -> Changeset {
        var changes = try pointChanges(changed, db)
        record(changes, pin)

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
            if change.old?.state.key != new.state.key { tree.insert((), key: new.state.key) }
            rows[new.rowID] = new.state
        }
        for index in changes.indices {
            if let new = changes[index].new { changes[index].newIndex = tree.rank(of: new.state.key) }
        }
        return changeset(of: changes, oldCount: oldCount)
    }

    /// The changeset of changes whose old indices (in a tree of `oldCount`
    /// rows) and new ones (in `tree`) are set.
    func changeset(of changes: [Change], oldCount: Int) -> Changeset {
        let positionChanging = changes.count(where: { $0.changesPosition })
        let keyChanges = changes.count(where: { $0.keyChanged })
        guard positionChanging > 0 || changes.contains(where: { $0.modified }) else { return Changeset() }

        var changeset = Changeset()
        if keyChanges == 0 {
            // Rows present before and after keep their order: no moves.
            for change in changes {
                if change.old == nil { changeset.insertions.append(change.newIndex) }
                else if change.new == nil { changeset.deletions.append(change.oldIndex) }
                else if change.modified { changeset.modifications.append(change.oldIndex) }
            }
        } else {
            changeset = windowDiff(changes, oldCount: oldCount)
        }
        changeset.deletions.sort()
        changeset.insertions.sort()
        changeset.modifications.sort()
        return changeset
    }

    /// The changes of the named rows: each one's state before (held) and
    /// after (a point query, which also tells whether it matches the
    /// filter), rows renumbered paired with their old selves.
    ///
    /// - Parameter scores: for an ordering by relevance, the index's scores by rowid.
    func pointChanges(_ changed: Set<Int64>, _ db: Database, scores: ((Int64) -> Double?)? = nil) throws -> [Change] {
        let plan = self.plan
        let statement = try db.cachedStatement(sql: plan.pointSQL)
        defer { statement.reset() }
        let decoder = statement.decoder(tableName: plan.table.name)
        var changes: [Change] = []
        var vanished: [RowIdentity: Int] = [:]    // identity -> index in changes, for rows only in the old state
        var appeared: [Change] = []
        for rowID in changed.sorted() {
            statement.reset()
            try statement.bind([.integer(rowID)] + plan.pointArguments)
            let old = rows[rowID].map { (rowID, $0) }
            var new: (rowID: Int64, state: RowState, element: Element)?
            if try statement.step() {
                // The state first: decoding reads text as UTF-8, which
                // converts a UTF-16 database's column in place, and the sort
                // key and hashes compare the stored bytes.
                var state = state(statement, plan, scores: scores)
                let element = try decode(decoder)
                state.key = sectioned(state.key, element, plan)
                new = (rowID, state, element)
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
        if plan.identityColumns == nil { changes = Self.pairedByValues(changes) }
        return changes
    }

    /// Keeps what the changed rows were for the snapshots still held (the
    /// new state's snapshot starts with the rows just decoded), and the
    /// elements decoded.
    func record(_ changes: [Change], _ pin: ReadPin?) {
        // (A row renumbered leaves its old rowid to another row, or to none.)
        carryStates(changed: changes.compactMap { change in
            guard let old = change.old, change.new?.state.content != old.state.content || change.new?.rowID != old.rowID else { return nil }
            return old.rowID
        }, to: pin)
        fresh = [:]
        for change in changes {
            if let old = change.old { materialized?[old.rowID] = nil }
            if let new = change.new { hold(new.element, at: new.rowID) }
        }
    }

    /// The changeset of a commit that changed sort keys: the diff of the
    /// span of both results that holds every row not where it was (outside
    /// it, the same rows sit at the same indices), as the re-query path
    /// would compute it, in O(k log k) for k changed rows.
    ///
    /// The rows that did not move keep their order, so between the changed
    /// rows' old and new positions they form runs that are contiguous in
    /// both results. A run is kept or moved as a whole by
    /// `heaviestIncreasingSubsequence` (every other row is before all of it
    /// or after all of it in both results), so the diff runs on one item
    /// per run, weighted by its rows, and gives what the diff of the whole
    /// window gives.
    func windowDiff(_ changes: [Change], oldCount: Int) -> Changeset {
        let newCount = tree.count
        // The rows that may move: the positions they leave and take, the
        // deletions and insertions among them, and those in both results
        // (each a run of one).
        var left: [Int] = []
        var taken: [Int] = []
        var moving: [ChangesetBuilder.Run] = []
        var deletions: [Int] = []
        var insertions: [Int] = []
        for change in changes where change.changesPosition {
            if change.old != nil { left.append(change.oldIndex) }
            if change.new != nil { taken.append(change.newIndex) }
            switch (change.old != nil, change.new != nil) {
            case (true, true):
                moving.append(.row(old: change.oldIndex, new: change.newIndex, .init(keyChanged: change.keyChanged, modified: change.modified)))
            case (true, false): deletions.append(change.oldIndex)
            case (false, true): insertions.append(change.newIndex)
            case (false, false): break
            }
        }
        left.sort()
        taken.sort()
        // The window: from the first position any of them leaves or takes to
        // the last; outside it, the same rows sit at the same indices.
        let low = min(left.first ?? Int.max, taken.first ?? Int.max)
        let oldHigh = left.last ?? -1
        let newHigh = taken.last ?? -1
        let suffix = min(oldCount - max(oldHigh + 1, low), newCount - max(newHigh + 1, low))
        let oldEnd = oldCount - suffix
        let newEnd = newCount - suffix
        // The staying rows, numbered 0..<staying in order: the r-th sits at
        // low + r + (how many left/taken positions come before it).
        let staying = oldEnd - low - left.count
        assert(newEnd - low - taken.count == staying, "the same rows stay in both windows")
        func breaks(_ positions: [Int]) -> [Int] { positions.enumerated().map { $0.element - low - $0.offset } }
        let leftBreaks = breaks(left)
        let takenBreaks = breaks(taken)
        var bounds = Set(leftBreaks + takenBreaks).filter { $0 > 0 && $0 < staying }
        bounds.insert(0)
        let starts = bounds.sorted()
        func countAtOrBelow(_ sorted: [Int], _ value: Int) -> Int {
            var lower = 0, upper = sorted.count
            while lower < upper {
                let middle = (lower + upper) / 2
                if sorted[middle] <= value { lower = middle + 1 } else { upper = middle }
            }
            return lower
        }

        var runs: [ChangesetBuilder.Run] = []
        if staying > 0 {
            for (offset, start) in starts.enumerated() {
                let end = offset + 1 < starts.count ? starts[offset + 1] : staying
                let length = end - start
                runs.append(ChangesetBuilder.Run(old: low + start + countAtOrBelow(leftBreaks, start), new: low + start + countAtOrBelow(takenBreaks, start),
                                 length: length, weight: .init(kept: length, keyUnchanged: length, unmodified: length)))
            }
        }
        var modifiedOutside: [Int] = []
        for change in changes where change.modified && !change.changesPosition {
            guard change.oldIndex >= low, change.oldIndex < oldEnd else {
                modifiedOutside.append(change.oldIndex)   // outside the window: stays where it was
                continue
            }
            let rank = change.oldIndex - low - countAtOrBelow(left, change.oldIndex)
            let run = countAtOrBelow(starts, rank) - 1
            runs[run].weight.unmodified -= 1
            runs[run].modified.append(change.oldIndex)
        }
        var changeset = ChangesetBuilder.diff(runs: runs + moving, deletions: deletions, insertions: insertions)
        changeset.modifications = (changeset.modifications + modifiedOutside).sorted()
        return changeset
    }
}
