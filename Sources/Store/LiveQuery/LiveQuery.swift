
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

    var plan: QueryPlan
    let decode: Decode
    let sectionValue: SectionValue?
    /// The result's order: sort keys by position (elements are read on access).
    var tree: OrderedTree<Void>
    var rows: LiveRows
    var source: ElementSource<Element>

    // The states handed out as snapshots, and how they read their elements.

    /// The read transaction of the current state (nil for a one-off read):
    /// held, so that the rows' values before the next commit can be read.
    /// Every event moves it forward, so live queries hold the same one.
    var statePin: ReadPin?
    /// Without a pin: every element of the current state.
    var materialized: [Int64: Element]?
    /// The current state's elements, once a snapshot asked for them.
    weak var latest: SnapshotRows<Element>?
    /// Every state still held that reads through the pin of the current one.
    var versions: [WeakRows<Element>] = []
    /// Elements decoded while reading the current state (a first screen, or
    /// the rows a commit changed): the first entries of its snapshot's cache.
    var fresh: [Int64: Element] = [:]
    /// For a search ranked by relevance: what it keeps of bm25 between
    /// commits (nil: nothing yet, or its rows were read again).
    var relevanceCache: RelevanceCache?
    /// For a query that follows a window of its result: the cut, the rows
    /// wanted on each side, the counts (`LiveQuery+Window.swift`). The tree
    /// then holds the window's rows only.
    var window: WindowState?

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
    /// - Parameter window: the window of the result to follow, with the
    ///   filter and orderings it reads with; nil for the whole result.
    init(plan: QueryPlan, decode: @escaping Decode, sectionValue: SectionValue? = nil, db: Database, pin: ReadPin?,
         window spec: (window: ResultsWindow, filter: Filter?, orderBy: [Ordering])? = nil,
         visit: ((Element) -> Void)? = nil) throws {
        self.plan = plan
        self.decode = decode
        self.sectionValue = sectionValue
        source = Self.source(plan, decode)
        rows = LiveRows(plan: plan)
        tree = OrderedTree(order: SortOrder(terms: []))
        statePin = pin
        if pin == nil { materialized = [:] }
        if let spec {
            guard sectionValue == nil else {
                throw StoreError(code: .invalidQuery, message: "a window of \(plan.table.name) cannot be sectioned: observe the window's rows and section them")
            }
            let sql = try WindowSQL(plan: plan, filter: spec.filter, orderBy: spec.orderBy, db: db)
            let (cut, cutPosition) = try Self.resolve(spec.window, sql, plan: plan, db: db)
            var pinnedOffset: Int?
            if case .offset(let offset) = spec.window.cut { pinnedOffset = offset }
            window = WindowState(sql: sql, filter: spec.filter, orderBy: spec.orderBy, cut: cut, before: spec.window.before,
                                 after: spec.window.after, pinnedOffset: pinnedOffset, cutPosition: cutPosition)
        }
        (tree, rows) = try fetchAll(db, old: nil, visit: visit)
    }

    static func source(_ plan: QueryPlan, _ decode: @escaping Decode) -> ElementSource<Element> {
        ElementSource(sql: plan.elementSQL, tableName: plan.table.name, decode: decode)
    }

    /// The current state, as a snapshot.
    var snapshot: ResultsSnapshot<Element> { ResultsSnapshot(tree: tree, rows: latestRows(), window: window?.position) }
    var count: Int { tree.count }

    func latestRows() -> SnapshotRows<Element> {
        if let latest { return latest }
        let rows = SnapshotRows(source: source, pin: statePin, held: materialized ?? [:], cached: fresh)
        if statePin != nil { versions.append(WeakRows(rows)) }
        latest = rows
        return rows
    }

    /// The order of the tree: the plan's, after the section value when there is one.
    var order: SortOrder {
        // Without a Swift comparison (a custom collation, relevance), rows
        // keep the places SQLite gave them: the key is the position.
        let terms = plan.sortOrder?.terms ?? [SortOrder.Term(descending: false, collation: .binary)]
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
            let statement = try db.cachedStatement(sql: plan.scanSQL)
            defer { statement.reset() }
            try statement.bind(plan.scanArguments)
            let decoder = StatementDecoder(statement: statement, tableName: plan.table.name)
            while try statement.step() { try body(try decode(decoder)) }
        }
    }

    /// The plan's sort key with the element's section value put first, if it has one.
    func sectioned(_ key: SortKey, _ element: Element, _ plan: QueryPlan) -> SortKey {
        guard let sectionValue else { return key }
        let rest = plan.sortOrder == nil ? [key.first] : (plan.orderColumns.isEmpty ? [] : [key.first] + key.rest)
        return SortKey(first: sectionValue.value(element), rest: rest, rowID: key.rowID)
    }

    func state(_ statement: Statement, _ plan: QueryPlan, scores: ((Int64) -> Double?)? = nil) -> RowState {
        let key = plan.sortKey(of: statement, scores: scores)
        let fingerprint = plan.fingerprint(of: statement)
        return RowState(key: key, fingerprint: fingerprint, content: plan.contentHash(of: statement, fingerprint: fingerprint),
                        key_identity: plan.identityColumns == nil ? nil : plan.identity(of: statement, key: key))
    }

    /// Elements of a first state kept in its snapshot's cache: a first screen.
    static var freshLimit: Int { SnapshotRows<Element>.cacheLimit / 4 }

    /// Keeps an element just decoded for the current state: among every
    /// element without a read transaction, in the snapshot's first cache
    /// entries (up to `freshLimit`) with one.
    func hold(_ element: Element, at rowID: Int64) {
        if materialized != nil {
            materialized?[rowID] = element
        } else if fresh.count < Self.freshLimit {
            fresh[rowID] = element
        }
    }

    /// Reads the whole result into a tree. Every row is decoded once (so
    /// that a row that cannot be decoded fails the query now, not when the
    /// app reads it), except rows whose content is as in `old`.
    func fetchAll(_ db: Database, old: LiveRows?, visit: ((Element) -> Void)? = nil) throws -> (OrderedTree<Void>, LiveRows) {
        if window != nil { return try fetchWindow(db) }
        let statement = try db.cachedStatement(sql: plan.fullSQL)
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
        var position: Int64 = 0
        if case .parts? = relevanceCache { relevanceCache = nil }   // rows may have changed unseen
        while try statement.step() {
            var state = state(statement, plan)
            if plan.sortOrder == nil {
                state.key = SortKey(first: SortValue.integer(position), rest: [], rowID: state.key.rowID)
                position += 1
            }
            if sectionValue != nil || old?[state.key.rowID]?.content != state.content {
                let element = try decode(decoder)
                visit?(element)
                state.key = sectioned(state.key, element, plan)
                hold(element, at: state.key.rowID)
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

    /// Brings the query to a commit's state: the one place that chooses how.
    ///
    /// - Nothing it reads changed: the states held move to `pin`.
    /// - A table it reads through a relationship changed: the rows those
    ///   related rows join are re-checked with its own; when that cannot be
    ///   told row by row, it is as if its own table changed unseen.
    /// - Its table changed unseen and its columns changed: it starts over
    ///   with a new plan (`replan`) and compares.
    /// - Otherwise: `apply` (incremental, hash scan or re-query).
    ///
    /// - Parameters:
    ///   - changes: what the commits since its state changed.
    ///   - db: a read transaction at the commit's state.
    ///   - pin: that read transaction, for the snapshots.
    ///   - makePlan: plans the query again (its table's columns changed).
    /// - Returns: the changeset, or nil when the result did not change.
    /// - Throws: `StoreError` when the query can no longer run (its table
    ///   dropped, a column renamed) or the database cannot be read; its
    ///   state is then no longer any commit's.
    func update(_ changes: ChangedRows, db: Database, pin: ReadPin, makePlan: (Database) throws -> QueryPlan) throws -> Changeset? {
        var change = changes.change(in: plan.table.name)
        if plan.dependencies.contains(where: { changes.change(matching: $0) != nil }), change != .unknown {
            if case .rows(let own)? = change ?? .rows([]), let related = try? relatedRows(changes, db: db) {
                change = .rows(own.union(related))
            } else {
                change = .unknown
            }
        }
        guard let change else {
            advance(to: pin)    // snapshots still held read at this commit from now on
            return nil
        }
        if change == .unknown, try db.tableInfo(plan.table.name) != plan.table {
            return try replan(try makePlan(db), db: db, pin: pin)
        }
        return try apply(change, db: db, pin: pin)
    }

    /// Applies a change of this query's own table: incrementally when the
    /// rows are named (and few), by a hash scan that finds them when they
    /// are not, the named rows with every score read again for a search
    /// ranked by relevance, by re-running the query otherwise.
    ///
    /// - Returns: the changeset, or nil when the result did not change.
    private func apply(_ change: ChangedRows.TableChange, db: Database, pin: ReadPin?) throws -> Changeset? {
        if window != nil { return try applyWindow(change, db: db, pin: pin) }
        let changeset: Changeset
        if case .rows(let changed) = change, plan.isIncremental, changed.count <= incrementalLimit {
            changeset = try applyIncrementally(changed, db, pin)
        } else if case .rows(let changed) = change, plan.isRescorable, sectionValue == nil, changed.count <= incrementalLimit {
            changeset = try applyRescored(changed, db, pin)
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
    var incrementalLimit: Int { max(64, tree.count / 4) }
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
