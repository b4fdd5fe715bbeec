/// What a live search ranked by relevance keeps of bm25 between commits.
enum RelevanceCache {
    /// Every match's bm25 parts: `BM25` computes SQLite's scores to the bit.
    case parts([Int64: BM25.Parts])
    /// `BM25` does not compute SQLite's scores (or the connection has no
    /// `sluice_bm25_parts`): every commit reads them from SQLite.
    case sqliteScores
}

/// Every match's score at one state: SQLite's, or computed from the parts kept.
struct RelevanceScores {
    var sqlite: [Int64: Double]?
    var parts: [Int64: BM25.Parts] = [:]
    var scorer: BM25.Scorer?

    /// The row's score; nil when it does not match.
    func score(_ rowID: Int64) -> Double? {
        if let sqlite { return sqlite[rowID] }
        guard let scorer, let row = parts[rowID] else { return nil }
        return scorer.score(row)
    }
}

/// A search ranked by relevance, kept row by row: a commit changes the
/// index's statistics (how many rows hold each term, their average length),
/// so every match's score moves, not only the changed rows'. The changed
/// rows are read again (point queries, and their bm25 parts), every other
/// score is computed from the parts kept (`BM25`), and the result is
/// re-sorted in Swift, as SQLite sorts.
extension LiveQuery {
    /// Which row an entry of the diff is: one left alone, or a change.
    private enum DiffID: Hashable {
        case held(Int64)
        case change(Int)
    }

    /// Applies the named rows' changes to a search whose every row matches
    /// the query it is ranked by (`QueryPlan.isRescorable`).
    ///
    /// A row left alone whose score drifted is not modified, and counts as
    /// keeping its sort values: when scores reorder rows, the changed row
    /// is the one that moves, as Realm prefers; when they only shift, no
    /// row moves.
    ///
    /// - Complexity: O(m) for m matches when the rows left alone keep their
    ///   order (O(m log m) when they do not), plus one point query per
    ///   changed row; the table's other rows are not read.
    func applyRescored(_ named: Set<Int64>, _ db: Database, _ pin: ReadPin?) throws -> Changeset {
        let plan = self.plan
        guard let relevance = plan.relevance else { return try applyByRequery(db, pin) }
        let scores = try currentScores(named, relevance, db)
        var changes = try pointChanges(named, db, scores: scores.score)
        var changeOfOldRow: [Int64: Int] = [:]
        for (index, change) in changes.enumerated() {
            if let old = change.old { changeOfOldRow[old.rowID] = index }
        }

        // The rows left alone, in their old order, with their new scores.
        let offset = relevance.termOffset
        let oldCount = tree.count
        var oldOrder: [DiffID] = []
        oldOrder.reserveCapacity(oldCount)
        var entries: [(key: SortKey, change: Int)] = []
        entries.reserveCapacity(oldCount + changes.count)
        var stale = false
        tree.forEach { key, _ in
            if let index = changeOfOldRow[key.rowID] {
                changes[index].oldIndex = oldOrder.count
                oldOrder.append(.change(index))
                return
            }
            oldOrder.append(.held(key.rowID))
            guard let score = scores.score(key.rowID) else {
                stale = true
                return
            }
            var key = key
            if offset == 0 { key.first = .real(score) } else { key.rest[offset - 1] = .real(score) }
            entries.append((key, -1))
        }
        // A row held that the index no longer holds changed through the
        // index alone (a rebuild): the search runs again.
        if stale { return try applyByRequery(db, pin) }
        record(changes, pin)

        let order = self.order
        let descending = order.terms.first?.descending ?? false
        func less(_ a: SortKey, _ b: SortKey) -> Bool {
            // Most comparisons are settled by the scores.
            if offset == 0, case .real(let x) = a.first, case .real(let y) = b.first, x != y { return descending ? x > y : x < y }
            return order.less(a, b)
        }
        // Usually the scores only shift: the rows left alone keep their order.
        let reordered = entries.indices.dropFirst().contains { !less(entries[$0 - 1].key, entries[$0].key) }
        if reordered { entries.sort { less($0.key, $1.key) } }
        for (index, change) in changes.enumerated() {
            guard let new = change.new else { continue }
            var lower = 0, upper = entries.count
            while lower < upper {
                let middle = (lower + upper) / 2
                if less(entries[middle].key, new.state.key) { lower = middle + 1 } else { upper = middle }
            }
            entries.insert((new.state.key, index), at: lower)
        }
        for (position, entry) in entries.enumerated() where entry.change >= 0 {
            changes[entry.change].newIndex = position
        }
        for index in changes.indices {
            guard let old = changes[index].old, let new = changes[index].new else { continue }
            // A changed row's score may drift as the others' do: only its own values count as a key change.
            changes[index].ownKeyChanged = old.rowID != new.rowID || plan.ownSortValuesChanged(old.state, new.state, extraTerm: false)
            changes[index].mayMove = true
        }

        var builder = OrderedTree<Void>.Builder(order: order)
        for entry in entries { builder.append((), key: entry.key) }
        tree = builder.finish()
        for change in changes {
            if let old = change.old { rows[old.rowID] = nil }
        }
        for change in changes {
            if let new = change.new { rows[new.rowID] = new.state }
        }
        for entry in entries where entry.change < 0 {
            rows.setSortValue(entry.key.value(at: offset), at: offset, of: entry.key.rowID)
        }

        var changeset: Changeset
        if reordered {
            let newOrder = entries.map { $0.change < 0 ? DiffID.held($0.key.rowID) : .change($0.change) }
            changeset = ChangesetBuilder.diff(old: oldOrder, new: newOrder) { id in
                guard case .change(let index) = id else { return .init() }
                return .init(keyChanged: changes[index].keyChanged, modified: changes[index].modified)
            }
        } else if changes.contains(where: { $0.changesPosition || $0.modified }) {
            // The rows left alone keep their order: the window of the changed rows.
            changeset = windowDiff(changes, oldCount: oldCount)
        } else {
            changeset = Changeset()
        }
        changeset.deletions.sort()
        changeset.insertions.sort()
        changeset.modifications.sort()
        return changeset
    }

    /// Every match's score at the state `db` reads: from the bm25 parts
    /// kept, with the named rows' read again and the index's figures of
    /// now; or, the first time (and whenever `BM25` cannot reproduce
    /// SQLite's scores), from SQLite's bm25.
    private func currentScores(_ named: Set<Int64>, _ relevance: QueryPlan.Relevance, _ db: Database) throws -> RelevanceScores {
        switch relevanceCache {
        case .sqliteScores?:
            return RelevanceScores(sqlite: try plan.scores(db))
        case .parts(var parts)?:
            for rowID in named { parts[rowID] = nil }
            var figures: BM25.Figures?
            let statement = try db.cachedStatement(sql: relevance.somePartsSQL)
            defer { statement.reset() }
            try statement.bind([relevance.query, .text("[" + named.map(String.init).joined(separator: ",") + "]")])
            while try statement.step() {
                guard let (read, row) = BM25.read(statement.bytes(at: 1)) else {
                    throw StoreError(code: .internal, message: "sluice_bm25_parts returned no parts for \(relevance.index)")
                }
                figures = read
                if named.contains(statement.int64(at: 0)) { parts[statement.int64(at: 0)] = row }
            }
            relevanceCache = .parts(parts)
            // No figures: nothing matches.
            return RelevanceScores(parts: figures == nil ? [:] : parts, scorer: figures.map(BM25.Scorer.init))
        case nil:
            var parts: [Int64: BM25.Parts] = [:]
            var scores: [Int64: Double] = [:]
            var exact = true
            do {
                let statement = try db.cachedStatement(sql: relevance.allPartsSQL)
                defer { statement.reset() }
                try statement.bind([relevance.query])
                var scorer: BM25.Scorer?
                while try statement.step() {
                    let rowID = statement.int64(at: 0)
                    let score = statement.double(at: 2)
                    scores[rowID] = score
                    guard exact, let (figures, row) = BM25.read(statement.bytes(at: 1)) else {
                        exact = false
                        continue
                    }
                    let computed = (scorer ?? BM25.Scorer(figures)).score(row)
                    if scorer == nil { scorer = BM25.Scorer(figures) }
                    parts[rowID] = row
                    exact = computed.bitPattern == score.bitPattern
                }
            } catch let error as StoreError where error.message.contains("sluice_bm25_parts") {
                // A connection without the function (its FTS5 could not register it).
                relevanceCache = .sqliteScores
                return RelevanceScores(sqlite: try plan.scores(db))
            }
            relevanceCache = exact ? .parts(parts) : .sqliteScores
            return RelevanceScores(sqlite: scores)
        }
    }
}
