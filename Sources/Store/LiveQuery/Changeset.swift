/// How a result changed between two states, in Realm's index spaces:
/// `deletions` and `modifications` are indices in the previous result,
/// `insertions` indices in the new one, all ascending; each of `moves`
/// pairs a row's old and new index (its `from` is also a deletion, its `to`
/// an insertion). The one changeset value: the live query makes it,
/// `CollectionChange` and the view models carry it.
public struct Changeset: Sendable, Hashable {
    /// A row that changed position: its index before and after.
    public struct Move: Hashable, Sendable {
        /// Index in the previous result (also in `deletions`).
        public let from: Int
        /// Index in the new result (also in `insertions`).
        public let to: Int

        /// Creates a move.
        ///
        /// - Parameters:
        ///   - from: the row's index in the previous result.
        ///   - to: its index in the new one.
        public init(from: Int, to: Int) {
            self.from = from
            self.to = to
        }
    }

    /// Indices in the previous result of rows that left it (or moved), ascending.
    public var deletions: [Int]
    /// Indices in the new result of rows that entered it (or moved), ascending.
    public var insertions: [Int]
    /// Indices in the previous result of rows that stayed in place and changed, ascending.
    public var modifications: [Int]
    /// Rows that moved, by old index.
    public var moves: [Move]

    /// A changeset.
    ///
    /// - Parameters:
    ///   - deletions: indices in the previous result, ascending.
    ///   - insertions: indices in the new result, ascending.
    ///   - modifications: indices in the previous result of rows changed in place, ascending.
    ///   - moves: the rows that moved, each also a deletion and an insertion.
    public init(deletions: [Int] = [], insertions: [Int] = [], modifications: [Int] = [], moves: [Move] = []) {
        self.deletions = deletions
        self.insertions = insertions
        self.modifications = modifications
        self.moves = moves
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { deletions.isEmpty && insertions.isEmpty && modifications.isEmpty }

    /// The modified rows' indices in the new result, ascending: each
    /// modified row's old index mapped across the deletions and insertions.
    ///
    /// - Complexity: O(d + i + m) for d deletions, i insertions, m modifications.
    public var modificationsNew: [Int] {
        Self.mapSurvivors(modifications, deletions: deletions, insertions: insertions)
    }

    /// Maps old indices of surviving rows to new indices. Survivors keep
    /// their relative order (a row whose order changes is a move), so the
    /// r-th survivor of the old result is the r-th survivor of the new one.
    static func mapSurvivors(_ oldIndices: [Int], deletions: [Int], insertions: [Int]) -> [Int] {
        var result: [Int] = []
        result.reserveCapacity(oldIndices.count)
        var deleted = 0          // deletions below the current old index
        var inserted = 0         // insertions at or below the current new index
        for old in oldIndices {
            while deleted < deletions.count, deletions[deleted] < old { deleted += 1 }
            var new = old - deleted + inserted
            while inserted < insertions.count, insertions[inserted] <= new {
                inserted += 1
                new += 1
            }
            result.append(new)
        }
        return result
    }

    /// Applies the changeset to an array that mirrors the previous result:
    /// afterwards it mirrors the new one.
    ///
    /// - Parameters:
    ///   - array: the previous result's elements (or what they map to).
    ///   - newElement: the element at an index of the new result; called for
    ///     the insertions and the modified rows' new indices only.
    /// - Throws: what `newElement` throws (the array is then partly changed).
    /// - Complexity: O(n) per deletion and insertion, O(1) per modification.
    public func apply<Mapped>(to array: inout [Mapped], newElement: (Int) throws -> Mapped) rethrows {
        for index in deletions.reversed() { array.remove(at: index) }
        for index in insertions { array.insert(try newElement(index), at: index) }
        for index in modificationsNew { array[index] = try newElement(index) }
    }
}

extension Changeset.Move: CustomStringConvertible {
    /// `3→0`.
    public var description: String { "\(from)→\(to)" }
}
