import Foundation

/// How sectioned results changed between two states, in the index spaces
/// a table view's batch updates use: the one sectioned changeset value, as
/// `Changeset` is the flat one. `SectionedResultsChange` and the view
/// models carry it.
///
/// `deletions` are index paths in the previous sections, `insertions` in
/// the new ones; `modifications` are the previous index paths of rows that
/// stayed in their section, in place, and changed, and `modificationsNew`
/// their new ones (in the same order). `sectionsToDelete` are indices of
/// previous sections that are gone, `sectionsToInsert` indices of new
/// sections; rows of deleted and inserted sections are not listed. A row
/// that changes section is a deletion plus an insertion. Apply in that
/// order: row deletions, section deletions, section insertions (with their
/// rows), row insertions, modifications.
public struct SectionedChangeset: Sendable, Hashable {
    /// Index paths in the previous sections of rows that left them (or changed section), ascending.
    public var deletions: [IndexPath]
    /// Index paths in the new sections of rows that entered them (or changed section), ascending.
    public var insertions: [IndexPath]
    /// Index paths in the previous sections of rows that stayed in place and changed, ascending.
    public var modifications: [IndexPath]
    /// The same rows' index paths in the new sections.
    public var modificationsNew: [IndexPath]
    /// Indices of new sections, ascending.
    public var sectionsToInsert: IndexSet
    /// Indices of previous sections that are gone, ascending.
    public var sectionsToDelete: IndexSet

    /// A sectioned changeset.
    ///
    /// - Parameters:
    ///   - deletions: index paths in the previous sections, ascending.
    ///   - insertions: index paths in the new sections, ascending.
    ///   - modifications: previous index paths of rows changed in place, ascending.
    ///   - modificationsNew: the same rows' new index paths.
    ///   - sectionsToInsert: indices of new sections.
    ///   - sectionsToDelete: indices of previous sections that are gone.
    public init(deletions: [IndexPath] = [], insertions: [IndexPath] = [], modifications: [IndexPath] = [],
                modificationsNew: [IndexPath] = [], sectionsToInsert: IndexSet = [], sectionsToDelete: IndexSet = []) {
        self.deletions = deletions
        self.insertions = insertions
        self.modifications = modifications
        self.modificationsNew = modificationsNew
        self.sectionsToInsert = sectionsToInsert
        self.sectionsToDelete = sectionsToDelete
    }

    /// Whether nothing changed.
    public var isEmpty: Bool {
        deletions.isEmpty && insertions.isEmpty && modifications.isEmpty && sectionsToInsert.isEmpty && sectionsToDelete.isEmpty
    }

    /// Applies the changeset to arrays that mirror the previous sections,
    /// taking the new sections' keys and rows from `newSection` and `newRow`:
    /// afterwards they equal the new ones.
    ///
    /// - Parameters:
    ///   - sections: the previous sections, each a key and its items.
    ///   - newSection: the key and items of the new section at an index.
    ///   - newRow: the item at an index path of the new sections.
    /// - Throws: what `newSection` or `newRow` throws (the arrays are then partly changed).
    /// - Complexity: O(d + s + i + m) array edits for d deletions, s
    ///   sections inserted or deleted, i insertions and m modifications,
    ///   each O(n) in the section it edits.
    public func apply<Key, Item>(to sections: inout [(key: Key, items: [Item])],
                                 newSection: (Int) throws -> (key: Key, items: [Item]),
                                 newRow: (IndexPath) throws -> Item) rethrows {
        for path in deletions.reversed() { sections[path[0]].items.remove(at: path[1]) }
        for index in sectionsToDelete.reversed() { sections.remove(at: index) }
        for index in sectionsToInsert { sections.insert(try newSection(index), at: index) }
        for path in insertions { sections[path[0]].items.insert(try newRow(path), at: path[1]) }
        for path in modificationsNew { sections[path[0]].items[path[1]] = try newRow(path) }
    }
}
