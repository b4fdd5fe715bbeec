
/// A window's edges: trimming a side that holds more rows than it wants,
/// refilling one that holds fewer from beyond its last row, and the
/// observer's requests to grow, shrink or move it.
extension LiveQuery {
    /// Applies changes to the window's tree (a change's new row only where
    /// `accept` takes its key), trims each side to the rows it wants,
    /// refills a side that holds fewer from beyond its last row (a keyset
    /// read at `db`), and returns the changeset in the window's indices.
    func settle(_ changes: [Change], _ db: Database, accept: (SortKey) -> Bool) throws -> Changeset {
        guard var window else { return Changeset() }
        let oldTree = tree
        let order = self.order
        var final: [Change] = []
        var kept: [Int64: Int] = [:]        // new rowid -> index in `final`, for rows in the tree now
        var returning: [Int64: Int] = [:]   // a held row that went beyond the rows known: if a refill brings it back
        for change in changes {
            guard let old = change.old else { continue }
            tree.remove(key: old.state.key)
            rows[old.rowID] = nil
        }
        for var change in changes {
            var rejected: Int64?
            if let new = change.new, !accept(new.state.key) {
                rejected = new.rowID
                change.new = nil
            }
            if change.old == nil, change.new == nil { continue }
            if let rejected { returning[rejected] = final.count }
            if let new = change.new {
                tree.insert((), key: new.state.key)
                rows[new.rowID] = new.state
                kept[new.rowID] = final.count
            }
            final.append(change)
        }
        func drop(_ key: SortKey) {
            tree.remove(key: key)
            if let index = kept.removeValue(forKey: key.rowID) {
                final[index].new = nil
            } else if let state = rows[key.rowID] {
                final.append(Change(old: (key.rowID, state), new: nil))
            }
            rows[key.rowID] = nil
            materialized?[key.rowID] = nil
        }
        func add(_ row: WindowRow) {
            tree.insert((), key: row.state.key)
            rows[row.rowID] = row.state
            if let index = returning[row.rowID] { final[index].new = row } else { final.append(Change(old: nil, new: row)) }
            hold(row.element, at: row.rowID)
        }
        var heldBefore = tree.rank { window.cut.isBefore($0, order) }
        while tree.count - heldBefore > window.after { drop(tree.entry(at: tree.count - 1).key) }
        while heldBefore > window.before {
            drop(tree.entry(at: 0).key)
            heldBefore -= 1
        }
        let heldAfter = tree.count - heldBefore
        if heldAfter < window.after {
            let from: (key: SortKey?, orEqual: Bool)? = heldAfter > 0 ? (tree.entry(at: tree.count - 1).key, false) : window.cut.bound(.after)
            for row in try readSide(db, .after, from: from, limit: window.after - heldAfter) { add(row) }
        }
        if heldBefore < window.before {
            let from: (key: SortKey?, orEqual: Bool)? = heldBefore > 0 ? (tree.entry(at: 0).key, false) : window.cut.bound(.before)
            let read = try readSide(db, .before, from: from, limit: window.before - heldBefore)
            for row in read { add(row) }
            heldBefore += read.count
        }
        window.heldBefore = heldBefore
        self.window = window
        final.removeAll { $0.old == nil && $0.new == nil }
        for index in final.indices {
            if let old = final[index].old { final[index].oldIndex = oldTree.rank(of: old.state.key) }
            if let new = final[index].new { final[index].newIndex = tree.rank(of: new.state.key) }
        }
        return changeset(of: final, oldCount: oldTree.count)
    }

    /// Grows, shrinks or moves the window at the query's current state
    /// (`db` reads it; `pin` is its read transaction, nil on a
    /// rollback-journal file). Returns the changeset, nil when nothing an
    /// observer sees changed.
    func resizeWindow(_ request: WindowRequest, db: Database, pin: ReadPin?) throws -> Changeset? {
        guard var window else { return nil }
        let position = window.position
        let heldBefore = window.heldBefore
        let heldAfter = tree.count - heldBefore
        switch request {
        case .grow(.end, let count):
            window.after += Swift.max(0, count)
        case .grow(.start, let count):
            guard let offset = window.pinnedOffset else {
                window.before += Swift.max(0, count)
                break
            }
            // An offset window moves its cut back instead, and holds the rows it passes.
            let passed = try readSide(db, .before, from: window.cut.bound(.before), limit: Swift.min(Swift.max(0, count), offset))
            if let earliest = passed.last { window.cut = .key(earliest.state.key, inclusive: true) }
            window.pinnedOffset = offset - passed.count
            window.after += passed.count
            window.cutPosition? -= passed.count
            self.window = window
            let changeset = try settle(passed.map { Change(old: nil, new: $0) }, db) { _ in true }
            return changeset.isEmpty && self.window?.position == position ? nil : changeset
        case .shrink(.end, let count):
            let count = Swift.max(0, count)
            if count <= heldAfter {
                window.after = heldAfter - count
            } else {
                // Past the after side: the cut moves back over the last rows before it.
                let passed = Swift.min(count - heldAfter, heldBefore)
                window.after = 0
                if passed > 0 {
                    window.cut = .key(tree.entry(at: heldBefore - passed).key, inclusive: true)
                    window.cutPosition? -= passed
                }
                window.before = heldBefore - passed
            }
        case .shrink(.start, let count):
            let count = Swift.max(0, count)
            if count <= heldBefore {
                window.before = heldBefore - count
            } else {
                // Past the before side: the cut moves on over the first rows after it.
                let passed = Swift.min(count - heldBefore, heldAfter)
                window.before = 0
                if passed > 0 {
                    window.cut = .key(tree.entry(at: heldBefore + passed - 1).key, inclusive: false)
                    window.cutPosition? += passed
                    window.pinnedOffset? += passed
                }
                window.after = heldAfter - passed
            }
        case .move(let spec):
            let (cut, resolvedPosition) = try Self.resolve(spec, window.sql, plan: plan, db: db)
            window.cut = cut
            window.before = spec.before
            window.after = spec.after
            if case .offset(let offset) = spec.cut { window.pinnedOffset = offset } else { window.pinnedOffset = nil }
            let counted = !window.needsCount
            window.cutPosition = resolvedPosition
            self.window = window
            let changeset = try applyByRequery(db, pin)
            if counted, let state = self.window, let total = state.total {
                self.window?.cutPosition = try cutPosition(state, total: total, db)
            }
            return changeset.isEmpty && self.window?.position == position ? nil : changeset
        }
        self.window = window
        let changeset = try settle([], db) { _ in true }
        return changeset.isEmpty && self.window?.position == position ? nil : changeset
    }
}
