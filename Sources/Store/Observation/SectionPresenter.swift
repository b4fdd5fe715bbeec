import Foundation

/// The sections present in a live query's result: one entry per distinct
/// leading sort value (the section's value), ordered as the results.
struct SectionState {
    let sections: OrderedTree<Void>
    let term: SortOrder.Term
    /// How text values of BINARY sections are encoded.
    let textEncoding: TextEncoding

    /// -1, 0 or 1: `a` before, with, or after `b` in the order.
    func compare(_ a: SortValue, _ b: SortValue) -> Int {
        let result = SortOrder.compare(a, b, collation: term.collation)
        return term.descending ? -result : result
    }

    static func key(_ value: SortValue) -> SortKey { SortKey(first: value, rest: [], rowID: 0) }

    /// The positions of a section's rows in the results.
    func range(of value: SortValue, in tree: OrderedTree<some Any>) -> Range<Int> {
        let lower = tree.rank { compare($0.first, value) < 0 }
        let upper = tree.rank { compare($0.first, value) <= 0 }
        return lower..<upper
    }

    /// The section's index.
    func index(of value: SortValue) -> Int {
        sections.rank(of: Self.key(value))
    }

    /// The sections of a whole result, in O(n).
    init(tree: OrderedTree<some Any>, term: SortOrder.Term, textEncoding: TextEncoding) {
        self.term = term
        self.textEncoding = textEncoding
        var values: [(key: SortKey, element: Void)] = []
        var last: SortValue?
        let order = SortOrder(terms: [term])
        tree.forEach { key, _ in
            if let previous = last, SortOrder.compare(previous, key.first, collation: term.collation) == 0 { return }
            values.append((Self.key(key.first), ()))
            last = key.first
        }
        sections = OrderedTree(order: order, sorted: values)
    }

    init(sections: OrderedTree<Void>, term: SortOrder.Term, textEncoding: TextEncoding) {
        self.sections = sections
        self.term = term
        self.textEncoding = textEncoding
    }

    /// A section value as the SQLite value it was read from.
    func sqliteValue(_ value: SortValue) -> SQLiteValue {
        value.sqliteValue(collation: term.collation, encoding: textEncoding)
    }
}

/// Presents a live query as sections, keeping which sections exist.
final class SectionPresenter<Key: Sendable, Element: Sendable>: ResultsPresenter {
    let sectionValue: LiveQuery<Element>.SectionValue?
    private let column: String?
    private let makeKey: @Sendable (SQLiteValue, Element) -> Key
    private var state: SectionState?

    init(sectionValue: LiveQuery<Element>.SectionValue?, column: String?, makeKey: @escaping @Sendable (SQLiteValue, Element) -> Key) {
        self.sectionValue = sectionValue
        self.column = column
        self.makeKey = makeKey
    }

    /// The term that decides sections, or why there is none.
    private func term(_ live: LiveQuery<Element>) throws -> SortOrder.Term {
        guard let term = live.order.terms.first else {
            let column = self.column ?? "?"
            let collation = live.plan.table.collation(of: column)
            throw StoreError(code: .invalidQuery, message: "cannot section by column '\(column)' of table \(live.plan.table.name): "
                             + "its collation \(collation) is not one Sluice can compare (BINARY, NOCASE, RTRIM)")
        }
        return term
    }

    func initial(_ live: LiveQuery<Element>) throws -> SectionedResultsChange<Key, Element> {
        let state = SectionState(tree: live.tree, term: try term(live), textEncoding: sectionValue != nil ? .utf8 : live.plan.textEncoding)
        self.state = state
        return .initial(SectionedResultsSnapshot(elements: live.snapshot, state: state, makeKey: makeKey, modificationsNew: [], previous: nil))
    }

    var readsPreviousElements: Bool { false }

    func update(_ live: LiveQuery<Element>, before: OrderedTree<Void>, elements: ResultsSnapshot<Element>?, _ changeset: Changeset) -> SectionedResultsChange<Key, Element>? {
        guard let old = state, let term = live.order.terms.first, term.collation == old.term.collation, term.descending == old.term.descending else {
            // The schema changed how the section column compares: start over.
            do { return try initial(live) } catch { return .error(error as? StoreError ?? StoreError(code: .error, message: "\(error)")) }
        }
        let (change, new) = Self.change(from: (before, old), to: live.snapshot, changeset, makeKey: makeKey)
        state = new
        return change
    }

    func error(_ error: StoreError) -> SectionedResultsChange<Key, Element> {
        .error(error)
    }

    /// The sectioned change between two states of a live query whose flat
    /// changeset is `changeset`, and the new sections: O(k log n) for k
    /// changed rows.
    static func change(from old: (tree: OrderedTree<Void>, state: SectionState), to new: ResultsSnapshot<Element>, _ changeset: Changeset,
                       makeKey: @escaping @Sendable (SQLiteValue, Element) -> Key) -> (SectionedResultsChange<Key, Element>, SectionState) {
        let oldState = old.state
        let oldTree = old.tree
        let tree = new.tree
        let modificationsNew = changeset.modificationsNew
        // The section values of every changed row, before and after.
        let deleted = changeset.deletions.map { oldTree.entry(at: $0).key.first }
        let inserted = changeset.insertions.map { tree.entry(at: $0).key.first }
        let modifiedOld = changeset.modifications.map { oldTree.entry(at: $0).key.first }
        let modifiedNew = modificationsNew.map { tree.entry(at: $0).key.first }

        // Each touched section, once: its rows before and after.
        var touched = (deleted + inserted + modifiedOld + modifiedNew).sorted { oldState.compare($0, $1) < 0 }
        touched = touched.reduce(into: []) { unique, value in
            if let last = unique.last, oldState.compare(last, value) == 0 { return }
            unique.append(value)
        }
        let ranges = touched.map { (old: oldState.range(of: $0, in: oldTree), new: oldState.range(of: $0, in: tree)) }
        func info(_ value: SortValue) -> (old: Range<Int>, new: Range<Int>) {
            var low = 0, high = touched.count
            while low < high {
                let middle = (low + high) / 2
                if oldState.compare(touched[middle], value) < 0 { low = middle + 1 } else { high = middle }
            }
            return ranges[low]
        }

        var sections = oldState.sections
        for (value, range) in zip(touched, ranges) {
            if range.old.isEmpty, !range.new.isEmpty { sections.insert((), key: SectionState.key(value)) }
            if !range.old.isEmpty, range.new.isEmpty { sections.remove(key: SectionState.key(value)) }
        }
        let newState = SectionState(sections: sections, term: oldState.term, textEncoding: oldState.textEncoding)
        var sectionsToDelete = IndexSet()
        var sectionsToInsert = IndexSet()
        for (value, range) in zip(touched, ranges) {
            if range.old.isEmpty, !range.new.isEmpty { sectionsToInsert.insert(newState.index(of: value)) }
            if !range.old.isEmpty, range.new.isEmpty { sectionsToDelete.insert(oldState.index(of: value)) }
        }

        var deletions: [IndexPath] = []
        var insertions: [IndexPath] = []
        var modifications: [IndexPath] = []
        var modifiedPaths: [IndexPath] = []
        func delete(_ index: Int, _ value: SortValue) {
            let range = info(value)
            guard !range.new.isEmpty else { return }   // the whole section goes
            deletions.append([oldState.index(of: value), index - range.old.lowerBound])
        }
        func insert(_ index: Int, _ value: SortValue) {
            let range = info(value)
            guard !range.old.isEmpty else { return }   // the whole section comes
            insertions.append([newState.index(of: value), index - range.new.lowerBound])
        }
        for (index, value) in zip(changeset.deletions, deleted) { delete(index, value) }
        for (index, value) in zip(changeset.insertions, inserted) { insert(index, value) }
        for offset in changeset.modifications.indices {
            let (oldIndex, newIndex) = (changeset.modifications[offset], modificationsNew[offset])
            let (oldValue, newValue) = (modifiedOld[offset], modifiedNew[offset])
            if oldState.compare(oldValue, newValue) == 0 {
                let range = info(oldValue)
                modifications.append([oldState.index(of: oldValue), oldIndex - range.old.lowerBound])
                modifiedPaths.append([newState.index(of: newValue), newIndex - range.new.lowerBound])
            } else {
                // Same place among all rows, another section.
                delete(oldIndex, oldValue)
                insert(newIndex, newValue)
            }
        }
        let snapshot = SectionedResultsSnapshot(elements: new, state: newState, makeKey: makeKey,
                                                modificationsNew: modifiedPaths.sorted(), previous: (oldTree, oldState, changeset))
        return (.update(snapshot, deletions: deletions.sorted(), insertions: insertions.sorted(), modifications: modifications.sorted(),
                        sectionsToInsert: sectionsToInsert, sectionsToDelete: sectionsToDelete), newState)
    }
}

extension SectionedResultsChange where Key: Sendable, Element: Sendable {
    /// `first` followed by `second`, as one change; nil when together they
    /// change nothing.
    static func merge(_ first: SectionedResultsChange, _ second: SectionedResultsChange) -> SectionedResultsChange? {
        switch (first, second) {
        case (_, .initial), (_, .error): return second
        case (.error, .update): return first
        case (.initial, .update(let sections, _, _, _, _, _)):
            return .initial(SectionedResultsSnapshot(elements: sections.elements, state: sections.state, makeKey: sections.makeKey,
                                                     modificationsNew: [], previous: nil))
        case (.update(let sections1, _, _, _, _, _), .update(let sections2, _, _, _, _, _)):
            guard let before = sections1.previous, let between = sections2.previous else { return second }
            let composed = ChangesetBuilder.compose(before.changeset, between.changeset, oldCount: before.tree.count)
            guard !composed.isEmpty else { return nil }
            return SectionPresenter<Key, Element>.change(from: (before.tree, before.sections), to: sections2.elements, composed,
                                                         makeKey: sections2.makeKey).0
        }
    }
}
