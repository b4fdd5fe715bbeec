
/// A live query that follows a window of its result (`ResultsWindow`): its
/// tree holds the window's rows only, and each commit's changed rows are
/// placed against the cut and the rows held, the window trimmed or
/// refilled at its edges by a keyset read from the last row held.
///
/// Why this and not an order-statistic structure of every key: the tree
/// would hold a key per row of the result (91 bytes a row today, 900 MB at
/// 10,000,000 rows) to answer what SQLite's index answers from disk. So
/// memory is the window's; the total count and the cut's position are
/// counted once by SQLite and then kept from the changed rows, whose old
/// state the query's read transaction (at the state before the commit)
/// still has.
extension LiveQuery {
    /// A row read for a window: its state and element.
    typealias WindowRow = (rowID: Int64, state: RowState, element: Element)

    /// Up to `limit` rows on `side` of the bound (the whole result's end
    /// when its key is nil), nearest first.
    func readSide(_ db: Database, _ side: WindowSQL.Side, from bound: (key: SortKey?, orEqual: Bool)?, limit: Int) throws -> [WindowRow] {
        guard limit > 0, let bound, let sql = window?.sql else { return [] }
        if let key = bound.key, key.rest.count != Swift.max(0, plan.orderColumns.count - 1) {
            // A schema change gave the order another number of terms than the cut was placed with.
            throw StoreError(code: .schema, message: "the order of the window of \(plan.table.name) changed with its table's schema; it starts over")
        }
        let (text, arguments) = try sql.rows(side, of: bound.key, orEqual: bound.orEqual, limit: limit)
        return try readRows(db, text, arguments)
    }

    func readRows(_ db: Database, _ sql: String, _ arguments: [SQLiteValue]) throws -> [WindowRow] {
        let statement = try db.cachedStatement(sql: sql)
        defer { statement.reset() }
        try statement.bind(arguments)
        let decoder = StatementDecoder(statement: statement, tableName: plan.table.name)
        var rows: [WindowRow] = []
        while try statement.step() {
            let state = state(statement, plan)   // before decoding, which may convert text in place
            rows.append((state.key.rowID, state, try decode(decoder)))
        }
        return rows
    }

    /// Reads the window's rows on both sides of its cut into a tree.
    func fetchWindow(_ db: Database) throws -> (OrderedTree<Void>, LiveRows) {
        guard let window else { return (OrderedTree(order: order), LiveRows(plan: plan)) }
        let before = try readSide(db, .before, from: window.cut.bound(.before), limit: window.before)
        let after = try readSide(db, .after, from: window.cut.bound(.after), limit: window.after)
        var builder = OrderedTree<Void>.Builder(order: order)
        var states = LiveRows(plan: plan, capacity: before.count + after.count)
        fresh = [:]
        for row in before.reversed() + after {
            builder.append((), key: row.state.key)
            states[row.rowID] = row.state
            hold(row.element, at: row.rowID)
        }
        self.window?.heldBefore = before.count
        return (builder.finish(), states)
    }

    /// Places a window's cut where `spec` says, at the state `db` reads.
    ///
    /// - Throws: `StoreError` `.notFound` when an anchor row is not in the result.
    static func resolve(_ spec: ResultsWindow, _ sql: WindowSQL, plan: QueryPlan, db: Database) throws -> (WindowCut, cutPosition: Int?) {
        func key(_ query: (sql: String, arguments: [SQLiteValue])) throws -> SortKey? {
            let statement = try db.cachedStatement(sql: query.sql)
            defer { statement.reset() }
            try statement.bind(query.arguments)
            return try statement.step() ? plan.sortKey(of: statement) : nil
        }
        switch spec.cut {
        case .first: return (.start, 0)
        case .last: return (.end, nil)
        case .offset(let offset):
            guard let found = try key(try sql.row(at: offset)) else { return (.end, nil) }
            return (.key(found, inclusive: true), offset)
        case .anchor(let value, let inclusive):
            guard let found = try key(try sql.anchor(value)) else {
                throw StoreError(code: .notFound, message: "no row with primary key \(value) in the results of \(plan.table.name) to anchor a window at")
            }
            return (.key(found, inclusive: inclusive), nil)
        }
    }

    /// Counts the result and the rows before the cut (once: later commits
    /// keep them) at `db`, the query's current state (on a rollback-journal
    /// file, the newest, which the next event brings it to). Returns whether
    /// the window's position changed.
    func countWindow(_ db: Database) throws -> Bool {
        guard let window, window.needsCount else { return false }
        let counted = try count(window, db)
        self.window?.total = counted.total
        self.window?.cutPosition = counted.cutPosition
        return self.window?.position != window.position
    }

    func count(_ window: WindowState, _ db: Database) throws -> (total: Int, cutPosition: Int) {
        let total = try db.fetchCount(window.sql.counted(before: nil))
        return (total, try cutPosition(window, total: total, db))
    }

    /// The number of rows before the cut (`total`: of the whole result).
    func cutPosition(_ window: WindowState, total: Int, _ db: Database) throws -> Int {
        switch window.cut {
        case .start: return 0
        case .end: return total
        case .key(let key, let inclusive):
            return try window.cutPosition ?? db.fetchCount(window.sql.counted(before: key, orEqual: !inclusive))
        }
    }

    /// Past this many changed rows, a window reads itself again (and counts again).
    var windowIncrementalLimit: Int { Swift.max(Self.beforeImageLimit, tree.count / 4) }

    /// Brings the window to a commit's state. Returns the changeset (empty
    /// when only the window's position or the count changed), nil when
    /// nothing an observer sees changed.
    func applyWindow(_ change: ChangedRows.TableChange, db: Database, pin: ReadPin?) throws -> Changeset? {
        guard let window else { return nil }
        let position = window.position
        let changeset: Changeset
        if case .rows(let changed) = change, changed.count <= windowIncrementalLimit, let old = statePin, materialized == nil {
            changeset = try applyWindowIncrementally(changed, db, pin, old: old)
        } else {
            changeset = try rereadWindow(db, pin)
        }
        if changeset.isEmpty, self.window?.position == position { return nil }
        return changeset
    }

    /// Which rows changed is not known (or too many did, or the plan is
    /// new): reads the window again at its cut (an offset window's cut
    /// placed at its position again), counts again if it had counted, and
    /// diffs.
    func rereadWindow(_ db: Database, _ pin: ReadPin?, detaching: Bool = false) throws -> Changeset {
        guard let window else { return Changeset() }
        let counted = !window.needsCount
        self.window?.total = nil
        self.window?.cutPosition = nil
        if let offset = window.pinnedOffset {
            let (cut, position) = try Self.resolve(.offset(offset, count: 0), window.sql, plan: plan, db: db)
            self.window?.cut = cut
            self.window?.cutPosition = position
        }
        let changeset = try applyByRequery(db, pin, detaching: detaching)
        if counted, let state = self.window {
            let recounted = try count(state, db)
            self.window?.total = recounted.total
            self.window?.cutPosition = recounted.cutPosition
        }
        return changeset
    }

    /// The incremental path: the changed rows read now and, for those the
    /// window does not hold, at the state before (`old`), for the counts.
    private func applyWindowIncrementally(_ changed: Set<Int64>, _ db: Database, _ pin: ReadPin?, old: ReadPin) throws -> Changeset {
        guard var window else { return Changeset() }
        let changes = try pointChanges(changed, db)
        // Each count, once known, follows the changed rows (an offset window's cut position is known from the start).
        if window.total != nil || window.cutPosition != nil {
            let outside = changed.filter { rows[$0] == nil }
            let oldKeys = outside.isEmpty ? [:] : try old.withDatabase { try keys(of: outside, $0) }
            var newKeys: [Int64: SortKey] = [:]
            for change in changes { if let new = change.new { newKeys[new.rowID] = new.state.key } }
            let order = self.order
            for rowID in changed {
                let was = rows[rowID]?.key ?? oldKeys[rowID]
                let now = newKeys[rowID]
                window.total? += (now == nil ? 0 : 1) - (was == nil ? 0 : 1)
                window.cutPosition? += (now.map { window.cut.isBefore($0, order) } == true ? 1 : 0)
                    - (was.map { window.cut.isBefore($0, order) } == true ? 1 : 0)
            }
            // An offset window whose cut is no longer at its position: the cut moves by as many rows.
            if let offset = window.pinnedOffset, let position = window.cutPosition {
                let target = window.total.map { Swift.min(offset, $0) } ?? offset
                if position != target {
                    let (cut, passed) = try shifted(window.cut, by: position - target, db)
                    window.cut = cut
                    window.cutPosition = position > target ? position - passed : position + passed
                    self.window = window
                    return try applyByRequery(db, pin)
                }
            }
            self.window = window
        }
        record(changes, pin)
        // A changed row comes into the window only where every row is known:
        // between the rows held at each end, or anywhere on a side that held
        // fewer rows than it wants (it reached the end of the result).
        let order = self.order
        let cut = window.cut
        let first = window.heldBefore >= window.before && tree.count > 0 ? tree.entry(at: 0).key : nil
        let last = tree.count - window.heldBefore >= window.after && tree.count > 0 ? tree.entry(at: tree.count - 1).key : nil
        return try settle(changes, db) { key in
            if cut.isBefore(key, order) {
                return window.before > 0 && first.map { !order.less(key, $0) } != false
            }
            return window.after > 0 && last.map { !order.less($0, key) } != false
        }
    }

    /// The sort keys of rows as they are at `db`'s state (those in the result).
    private func keys(of rowIDs: Set<Int64>, _ db: Database) throws -> [Int64: SortKey] {
        let statement = try db.cachedStatement(sql: plan.pointSQL)
        defer { statement.reset() }
        var keys: [Int64: SortKey] = [:]
        for rowID in rowIDs {
            statement.reset()
            try statement.bind([.integer(rowID)] + plan.pointArguments)
            if try statement.step() { keys[rowID] = plan.sortKey(of: statement) }
        }
        return keys
    }

    /// The cut moved by `rows` rows: earlier when positive (rows entered
    /// before it), later when negative; and how many rows it passed (fewer
    /// when it reached an end of the result).
    func shifted(_ cut: WindowCut, by rows: Int, _ db: Database) throws -> (WindowCut, passed: Int) {
        guard rows != 0 else { return (cut, 0) }
        if rows > 0 {
            let passed = try readSide(db, .before, from: cut.bound(.before), limit: rows)
            guard passed.count == rows, let earliest = passed.last else { return (.start, passed.count) }
            return (.key(earliest.state.key, inclusive: true), rows)
        }
        let passed = try readSide(db, .after, from: cut.bound(.after), limit: -rows)
        guard passed.count == -rows, let latest = passed.last else { return (.end, passed.count) }
        return (.key(latest.state.key, inclusive: false), -rows)
    }
}
