/// What a live query reports: its first result, then one change per commit
/// that changed it, as Realm's `RealmCollectionChange`.
///
/// ```swift
/// results.observe { change in
///     switch change {
///     case .initial(let people):
///         tableView.reloadData()
///     case .update(let people, let deletions, let insertions, let modifications):
///         tableView.performBatchUpdates { ... }   // old index paths for modifications, as UIKit wants
///         // change.moves and change.modificationsNew are there when an animation wants them
///     case .error(let error):
///         print(error)
///     }
/// }
/// ```
///
/// An `.update` carries Realm's four values; `changeset` gives them, with
/// the moves, as the one changeset value, `Changeset`, which documents
/// their index spaces. `apply(to:)` applies it to an array mirroring the
/// previous result.
///
/// Difference from Realm: the collection is a `ResultsSnapshot` (frozen,
/// random access), not a live `Results`; and the moves (Realm computes them
/// but drops them; AppKit, diffable data sources and animations need them)
/// are kept, as `moves`.
public enum CollectionChange<Element> {
    /// The result when observation starts.
    case initial(ResultsSnapshot<Element>)
    /// The result after a commit that changed it, and how it changed.
    case update(ResultsSnapshot<Element>, deletions: [Int], insertions: [Int], modifications: [Int])
    /// The query can no longer run (its table was dropped, a column renamed).
    case error(StoreError)

    /// A row that changed position: its index before and after.
    public typealias Move = Changeset.Move

    /// The result this change leads to, or nil for `.error`.
    public var results: ResultsSnapshot<Element>? {
        switch self {
        case .initial(let results), .update(let results, _, _, _): return results
        case .error: return nil
        }
    }

    /// The changeset of an `.update`; nil for `.initial` and `.error`.
    public var changeset: Changeset? {
        guard case .update(let results, let deletions, let insertions, let modifications) = self else { return nil }
        return Changeset(deletions: deletions, insertions: insertions, modifications: modifications, moves: results.moves)
    }

    /// The rows of an `.update` that changed position, each with its old
    /// and new index (its `from` is also in `deletions`, its `to` in
    /// `insertions`); empty for `.initial` and `.error`.
    public var moves: [Move] {
        guard case .update(let results, _, _, _) = self else { return [] }
        return results.moves
    }

    /// An `.update` with its moves (`.update` itself has Realm's four values).
    static func update(_ results: ResultsSnapshot<Element>, _ changeset: Changeset) -> CollectionChange {
        .update(results.with(moves: changeset.moves), deletions: changeset.deletions,
                insertions: changeset.insertions, modifications: changeset.modifications)
    }

    /// The modified rows' indices in the new result, ascending: each
    /// modified row's old index mapped across the deletions and insertions.
    ///
    /// - Complexity: O(d + i + m) for d deletions, i insertions, m modifications.
    public var modificationsNew: [Int] {
        changeset?.modificationsNew ?? []
    }
}

extension CollectionChange: @unchecked Sendable where Element: Sendable {}

extension CollectionChange {
    /// Applies the change to an array that mirrors the previous result:
    /// afterwards it equals the new result.
    ///
    /// - Complexity: O(n) in the worst case (array insertions), reading only
    ///   the inserted and modified elements of the new result.
    ///
    /// - Parameter array: the previous result's elements; afterwards, the new result's.
    public func apply(to array: inout [Element]) {
        apply(to: &array) { $0 }
    }

    /// Applies the change to an array of mapped elements, mapping only the
    /// inserted and modified rows (never the whole result, except for
    /// `.initial`).
    ///
    /// - Parameters:
    ///   - array: the previous result's mapped elements; afterwards, the new result's.
    ///   - transform: maps an element; called for the inserted and modified rows only.
    public func apply<Mapped>(to array: inout [Mapped], transform: (Element) throws -> Mapped) rethrows {
        switch self {
        case .initial(let results):
            array = try results.map(transform)
        case .update(let results, _, _, _):
            try changeset?.apply(to: &array) { try transform(results[$0]) }
        case .error:
            break
        }
    }
}
