import CSQLite

/// Keeps one query's result up to date across commits, and says how each
/// commit changed it: row by row when the commit's changed rows are known
/// (O(k log n)); when they are not (another connection wrote a table the
/// change log does not track), by scanning the query's rows and comparing
/// hashes of their values with those held, then row by row for the ones
/// that differ; by re-reading and diffing everything when many changed.
///
/// Used only on the observation queue (or, while it is being built for an
/// immediate first result, on the reader's queue).
final class LiveQuery<Element> {
    typealias Decode = (StatementDecoder) throws -> Element

    typealias RowState = LiveRowState

    /// A value computed from each element that comes first in the order
    /// (results sectioned by a closure), and its direction.
    struct SectionValue {
        let value: (Element) -> SortValue
        let descending: Bool
    }

    private(set) var plan: QueryPlan
    private let decode: Decode
    private let sectionValue: SectionValue?
    /// The result's order: sort keys by position (elements are read on access).
    private(set) var tree: OrderedTree<Void>
    private var rows: LiveRows
    private var source: ElementSource<Element>

    // The states handed out as snapshots, and how they read their elements.

    /// The read transaction of the current state (nil for a one-off read):
    /// held, so that the rows' values before the next commit can be read.
    /// Every event moves it forward, so live queries hold the same one.
    private var statePin: ReadPin?
    /// Without a pin: every element of the current state.
    private var materialized: [Int64: Element]?
    /// The current state's elements, once a snapshot asked for them.
    private weak var latest: SnapshotRows<Element>?
    /// Every state still held that reads through the pin of the current one.
    private var versions: [WeakRows<Element>] = []
    /// Elements decoded while reading the current state (a first screen, or
    /// the rows a commit changed): the first entries of its snapshot's cache.
    private var fresh: [Int64: Element] = [:]

    /// Past this many changed rows, states still held keep their own read
    /// transaction instead of the rows' old values.
    static var beforeImageLimit: Int { 4096 }

    /// Reads the whole result.
    ///
    /// - Parameter pin: the read transaction `db` is in, which snapshots
    ///   read their elements through; nil for a one-off read (snapshots
    ///   then hold every element).
    /// - Parameter visit: called with every element of the first result, as
    ///   it is read (a live aggregate's first value, without a second scan).
    init(plan: QueryPlan, decode: @escaping Decode, sectionValue: SectionValue? = nil, db: Database, pin: ReadPin?,
         visit: ((Element) -> Void)? = nil) throws {
        self.plan = plan
        self.decode = decode
        self.sectionValue = sectionValue
        source = Self.source(plan, decode)
        rows = LiveRows(plan: plan)
        tree = OrderedTree(order: SortOrder(terms: []))
        statePin = pin
        if pin == nil { materialized = [:] }
        (tree, rows) = try fetchAll(db, old: nil, visit: visit)
    }

    private static func source(_ plan: QueryPlan, _ decode: @escaping Decode) -> ElementSource<Element> {
        ElementSource(sql: plan.elementSQL, tableName: plan.table.name, decode: decode)
    }

    /// The current state, as a snapshot.
    var snapshot: ResultsSnapshot<Element> { ResultsSnapshot(tree: tree, rows: latestRows()) }
    var count: Int { tree.count }

    private func latestRows() -> SnapshotRows<Element> {
        if let latest { return latest }
        let rows = SnapshotRows(source: source, pin: statePin, held: materialized ?? [:], cached: fresh)
        if statePin != nil { versions.append(WeakRows(rows)) }
        latest = rows
        return rows
    }

    /// The order of the tree: the plan's, after the section value when there is one.
    var order: SortOrder {
        let terms = plan.sortOrder?.terms ?? []
        guard let sectionValue else { return SortOrder(terms: terms) }
        return SortOrder(terms: [SortOrder.Term(descending: sectionValue.descending, collation: .binary)] + terms)
    }

    /// Calls `body` with every element of the current state, read in one
    /// scan (in no particular order).
    func forEachElement(_ body: (Element) throws -> Void) throws {
        if let materialized {
            for element in materialized.values { try body(element) }
            return
        }
        guard let statePin else { throw StoreError(code: .internal, message: "a live query read outside of its read transaction") }
        try statePin.withDatabase { db in
            let statement = try db.connection.cachedStatement(sql: plan.scanSQL)
            defer { statement.reset() }
            try statement.bind(plan.scanArguments)
            let decoder = StatementDecoder(statement: statement, tableName: plan.table.name)
            while try statement.step() { try body(try decode(decoder)) }
        }
    }

    /// The plan's sort key with the element's section value put first, if it has one.
    private func sectioned(_ key: SortKey, _ element: Element, _ plan: QueryPlan) -> SortKey {
        guard let sectionValue else { return key }
        return SortKey(first: sectionValue.value(element), rest: plan.orderColumns.isEmpty ? [] : [key.first] + key.rest, rowID: key.rowID)
    }

    private func state(_ statement: Statement, _ plan: QueryPlan) -> RowState {
        let key = plan.sortKey(of: statement)
        let fingerprint = plan.fingerprint(of: statement)
        return RowState(key: key, fingerprint: fingerprint, content: plan.contentHash(of: statement, fingerprint: fingerprint),
                        key_identity: plan.identityColumns == nil ? nil : plan.identity(of: statement, key: key))
    }

    /// Elements of a first state kept in its snapshot's cache: a first screen.
    private static var freshLimit: Int { SnapshotRows<Element>.cacheLimit / 4 }

    /// Reads the whole result into a tree. Every row is decoded once (so
    /// that a row that cannot be decoded fails the query now, not when the
    /// app reads it), except rows whose content is as in `old`.
    private func fetchAll(_ db: Database, old: LiveRows?, visit: ((Element) -> Void)? = nil) throws -> (OrderedTree<Void>, LiveRows) {
        let statement = try db.connection.cachedStatement(sql: plan.fullSQL)
        defer { statement.reset() }
        try statement.bind(plan.fullArguments)
        let decoder = StatementDecoder(statement: statement, tableName: plan.table.name)
        // Rows come in order, straight into the tree's leaves, unless a section value must be put first.
        var builder = OrderedTree<Void>.Builder(order: order)
        var keys: [SortKey] = []
        let plan = self.plan
        var states = LiveRows(plan: plan, extraTerm: sectionValue != nil, capacity: old?.count ?? 0)
        if sectionValue != nil { keys.reserveCapacity(old?.count ?? 0) }
        fresh = [:]
        while try statement.step() {
            var state = state(statement, plan)
            if sectionValue != nil || old?[state.key.rowID]?.content != state.content {
                let element = try decode(decoder)
                visit?(element)
                state.key = sectioned(state.key, element, plan)
                if materialized != nil {
                    materialized?[state.key.rowID] = element
                } else if fresh.count < Self.freshLimit {
                    fresh[state.key.rowID] = element
                }
            }
            if sectionValue == nil { builder.append((), key: state.key) } else { keys.append(state.key) }
            states[state.key.rowID] = state
        }
        if sectionValue != nil {
            // SQLite gave the plan's order: put the section values first, keeping that order within each.
            let descending = order.terms[0].descending
            func sectionOrder(_ a: SortKey, _ b: SortKey) -> Int {
                let result = SortOrder.compare(a.first, b.first, collation: .binary)
                return descending ? -result : result
            }
            // Often already so (sections by an initial of the sort column): then no sort.
            if keys.indices.dropFirst().allSatisfy({ sectionOrder(keys[$0 - 1], keys[$0]) <= 0 }) {
                for key in keys { builder.append((), key: key) }
            } else {
                let sorted = keys.indices.sorted { a, b in
                    let result = sectionOrder(keys[a], keys[b])
                    return result == 0 ? a < b : result < 0
                }
                for index in sorted { builder.append((), key: keys[index]) }
            }
        }
        return (builder.finish(), states)
    }

    // MARK: - States held by snapshots

    /// Before a commit's changes are applied: every state still held keeps
    /// the old values of the rows it changed (read at the current state),
    /// then reads the rest at the commit's state, through `pin`. Past
    /// `beforeImageLimit` rows, or when the rows' columns changed, they keep
    /// their own read transaction instead.
    private func carryStates(changed: [Int64], to pin: ReadPin?, detaching: Bool = false) {
        defer {
            statePin = pin
            if !changed.isEmpty || detaching { latest = nil }
        }
        guard let pin, materialized == nil else { return }
        let held = versions.compactMap { $0.rows }
        versions = held.map(WeakRows.init)
        guard !held.isEmpty else { return }
        let present = changed.filter { rows[$0] != nil }
        var images: [Int64: Element] = [:]
        if !present.isEmpty {
            guard !detaching, present.count <= Self.beforeImageLimit, let old = held[0].currentPin, old !== pin,
                  let read = try? old.withDatabase({ db in try source.read(present, on: db) }) else {
                versions = []
                return
            }
            images = Dictionary(uniqueKeysWithValues: zip(present, read))
        } else if detaching {
            versions = []
            return
        }
        for rows in held { rows.advance(keeping: images, to: pin) }
    }

    /// Reads through `new` what was read through `old`, a read transaction at the same state.
    func repin(from old: ReadPin, to new: ReadPin) {
        if statePin === old { statePin = new }
        for rows in versions.compactMap({ $0.rows }) where rows.currentPin === old {
            rows.advance(keeping: [:], to: new)
        }
    }

    /// Moves the states held to a commit's read transaction when the commit
    /// changed nothing this query reads.
    func advance(to pin: ReadPin) {
        carryStates(changed: [], to: pin)
    }

    /// The rows of this query's table that a commit's changes to related
    /// tables may have added to or removed from the result: those the changed
    /// related rows join, before the commit (read at the current state) or
    /// after it. Nil when that cannot be told row by row (see
    /// `QueryPlan.relatedRowsSQL`, a table's change not named row by row,
    /// no read transaction of the current state, or too many rows).
    func relatedRows(_ changes: ChangedRows, db: Database) throws -> Set<Int64>? {
        guard let queries = plan.relatedRowsSQL, let old = statePin, materialized == nil else { return nil }
        var affected = Set<Int64>()
        for table in plan.dependencies {
            guard let change = changes.change(matching: table) else { continue }
            guard case .rows(let rowIDs) = change, let sqls = queries[table], rowIDs.count <= incrementalLimit else { return nil }
            let list = SQLiteValue.text("[" + rowIDs.map(String.init).joined(separator: ",") + "]")
            for sql in sqls {
                for database in [db, nil] {
                    let read = { (db: Database) in try db.fetchRows(sql: sql, arguments: [list]).compactMap { Int64(sqliteValue: $0[0]) } }
                    affected.formUnion(try database.map(read) ?? old.withDatabase(read))
                }
            }
            if affected.count > incrementalLimit { return nil }
        }
        return affected
    }

    /// Applies a commit's changes to this query's table.
    ///
    /// - Returns: the changeset, or nil when the result did not change.
    func apply(_ change: ChangedRows.TableChange, db: Database, pin: ReadPin?) throws -> Changeset? {
        let changeset: Changeset
        if case .rows(let changed) = change, plan.isIncremental, changed.count <= incrementalLimit {
            changeset = try applyIncrementally(changed, db, pin)
        } else if case .unknown = change, plan.isIncremental, let changed = try changedRows(db) {
            if changed.isEmpty {
                carryStates(changed: [], to: pin)
                changeset = Changeset()
            } else {
                changeset = try applyIncrementally(changed, db, pin)
            }
        } else {
            changeset = try applyByRequery(db, pin)
        }
        return changeset.isEmpty ? nil : changeset
    }

    /// Past this many changed rows, re-reading everything is cheaper than one point query each.
    private var incrementalLimit: Int { max(64, tree.count / 4) }

    // MARK: - Finding changed rows: O(n), nothing decoded

    /// The rows that entered, left or changed since the last state, found by
    /// scanning the query's rows unsorted and comparing each one's hash with
    /// the one held; nil when more than `incrementalLimit` changed.
    private func changedRows(_ db: Database) throws -> Set<Int64>? {
        let plan = self.plan
        let statement = try db.connection.cachedStatement(sql: plan.scanSQL)
        defer { statement.reset() }
        try statement.bind(plan.scanArguments)
        let limit = incrementalLimit
        var changed = Set<Int64>()
        var scanned: [Int64] = []
        scanned.reserveCapacity(rows.count + 16)
        var held = 0
        while try statement.step() {
            let rowID = sqlite3_column_int64(statement.handle, 0)
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
        let changeset = try applyByRequery(db, pin, detaching: true)
        source = Self.source(plan, decode)
        return changeset.isEmpty ? nil : changeset
    }

    // MARK: - Re-query and diff: O(n + w log w), changed rows decoded

    private func applyByRequery(_ db: Database, _ pin: ReadPin?, detaching: Bool = false) throws -> Changeset {
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
        // Rows whose values are all as they were are not decoded again.
        let (newTree, states) = try fetchAll(db, old: oldRows)
        var newOrder: [RowIdentity] = []
        newOrder.reserveCapacity(newTree.count)
        var newByIdentity: [RowIdentity: RowState] = [:]
        newByIdentity.reserveCapacity(newTree.count)
        newTree.forEach { key, _ in
            guard let state = states[key.rowID] else { return }
            let identity = state.identity(key.rowID)
            newOrder.append(identity)
            newByIdentity[identity] = state
        }
        if plan.identityColumns == nil {
            (newOrder, newByIdentity) = Self.pairedByValues(old: oldOrder, oldByIdentity, new: newOrder, newByIdentity)
        }
        if materialized != nil {
            for rowID in oldRows.rowIDs where states[rowID] == nil { materialized?[rowID] = nil }
        }
        let changed = oldRows.rowIDs.filter { states[$0]?.content != oldRows[$0]?.content }
        carryStates(changed: changed, to: pin, detaching: detaching)
        let changeset = ChangesetBuilder.diff(old: oldOrder, new: newOrder) { identity in
            guard let old = oldByIdentity[identity], let new = newByIdentity[identity] else { return .init() }
            return .init(keyChanged: !old.key.hasSameValues(as: new.key), modified: old.fingerprint != new.fingerprint)
        }
        // Rebuild even when nothing is reported: with keyPaths, sort keys and
        // unobserved columns may change without a reported modification.
        tree = newTree
        rows = states
        return changeset
    }

    /// Where the rowid is the identity, the new state's identities with the
    /// rows that changed paired by their values first (`RowPairing`): a row
    /// renumbered keeps its old identity; a row at a rowid whose old row
    /// went elsewhere is a new one there (`.newAt`).
    ///
    /// - Complexity: O(n).
    private static func pairedByValues(old oldOrder: [RowIdentity], _ oldByIdentity: [RowIdentity: RowState], new newOrder: [RowIdentity],
                                       _ newByIdentity: [RowIdentity: RowState]) -> ([RowIdentity], [RowIdentity: RowState]) {
        var olds: [RowPairing.Row] = []
        var oldIdentities: [RowIdentity] = []
        for identity in oldOrder {
            guard case .rowID(let rowID) = identity, let state = oldByIdentity[identity], newByIdentity[identity]?.content != state.content else { continue }
            olds.append(RowPairing.Row(rowID: rowID, content: state.content))
            oldIdentities.append(identity)
        }
        var news: [RowPairing.Row] = []
        var newOffsets: [Int] = []
        for (offset, identity) in newOrder.enumerated() {
            guard case .rowID(let rowID) = identity, let state = newByIdentity[identity], oldByIdentity[identity]?.content != state.content else { continue }
            news.append(RowPairing.Row(rowID: rowID, content: state.content))
            newOffsets.append(offset)
        }
        guard !olds.isEmpty, !news.isEmpty else { return (newOrder, newByIdentity) }
        var order = newOrder
        var byIdentity = newByIdentity
        let paired = RowPairing.pair(old: olds, new: news)
        for offset in newOffsets { byIdentity[newOrder[offset]] = nil }
        for (index, offset) in newOffsets.enumerated() {
            guard let state = newByIdentity[newOrder[offset]] else { continue }
            let identity = paired[index].map { oldIdentities[$0] } ?? (oldByIdentity[newOrder[offset]] != nil ? .newAt(news[index].rowID) : newOrder[offset])
            order[offset] = identity
            byIdentity[identity] = state
        }
        return (order, byIdentity)
    }

    /// Where the rowid is the identity, the incremental path's changes with
    /// their rows paired by values first (`RowPairing`).
    private static func pairedByValues(_ changes: [Change]) -> [Change] {
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
        /// Its sort values changed, or its rowid (which breaks ties): it may have moved.
        var keyChanged: Bool {
            guard let old, let new else { return false }
            return old.rowID != new.rowID || !old.state.key.hasSameValues(as: new.state.key)
        }
        var modified: Bool {
            guard let old, let new else { return false }
            return old.state.fingerprint != new.state.fingerprint
        }
        /// Whether the row may not be where it was among the others.
        var changesPosition: Bool { old == nil || new == nil || keyChanged }
    }

    private func applyIncrementally(_ changed: Set<Int64>, _ db: Database, _ pin: ReadPin?) throws -> Changeset {
        let plan = self.plan
        let statement = try db.connection.cachedStatement(sql: plan.pointSQL)
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
                var state = state(statement, plan)
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

        // Snapshots still held keep what these rows were; the new state's
        // snapshot starts with the rows just decoded.
        // (A row renumbered leaves its old rowid to another row, or to none.)
        carryStates(changed: changes.compactMap { change in
            guard let old = change.old, change.new?.state.content != old.state.content || change.new?.rowID != old.rowID else { return nil }
            return old.rowID
        }, to: pin)
        fresh = [:]
        for change in changes {
            if materialized != nil {
                if let old = change.old { materialized?[old.rowID] = nil }
                if let new = change.new { materialized?[new.rowID] = new.element }
            } else if let new = change.new, fresh.count < Self.freshLimit {
                fresh[new.rowID] = new.element
            }
        }

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
        var positionChanging = 0
        var keyChanges = 0
        for index in changes.indices {
            if let new = changes[index].new { changes[index].newIndex = tree.rank(of: new.state.key) }
            if changes[index].changesPosition { positionChanging += 1 }
            if changes[index].keyChanged { keyChanges += 1 }
        }
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
    private func windowDiff(_ changes: [Change], oldCount: Int) -> Changeset {
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

/// A state held by snapshots, without keeping it alive.
struct WeakRows<Element> {
    weak var rows: SnapshotRows<Element>?
    init(_ rows: SnapshotRows<Element>) { self.rows = rows }
}

/// What a live query holds of each row besides its place in the order. Outside the
/// generic `LiveQuery` so that dictionaries of it are specialized.
struct LiveRowState {
    var key: SortKey
    var fingerprint: Int
    /// A hash of all its values (`QueryPlan.contentHash`).
    var content: Int
    /// The declared key, for tables whose identity is not the rowid.
    var key_identity: RowIdentity?

    func identity(_ rowID: Int64) -> RowIdentity { key_identity ?? .rowID(rowID) }
}

// A live query belongs to the observation queue.
@available(*, unavailable)
extension LiveQuery: Sendable {}
