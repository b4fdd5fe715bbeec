/// The elements of a live query after one commit: an immutable,
/// random-access collection (like Realm's `Results` in a change
/// notification, but frozen: it never changes after you receive it).
///
/// It is lazy, like Realm's `Results`: it holds the rows' places, and reads
/// an element from the database when you access it (through a read
/// transaction kept at a commit where the row is as it was at this one),
/// caching up to ``cacheLimit`` elements. A live query over a million rows
/// therefore holds no second copy of them. Producing a snapshot after a
/// commit that changed k rows costs O(k log n). Reading an element by
/// index is O(log n) plus, when it is not cached, one read by rowid;
/// iterating reads the rows a few dozen at a time. `Array(snapshot)` makes
/// an array when one is needed.
///
/// While a snapshot is alive, the rows the later commits change keep their
/// values here, so holding an old snapshot costs memory for those rows
/// (and, after a commit that changed thousands of rows, an open read
/// transaction until the snapshot is released).
public struct ResultsSnapshot<Element>: RandomAccessCollection {
    let tree: OrderedTree<Void>
    let rows: SnapshotRows<Element>
    /// The rows that moved in the commit that led to this snapshot (for
    /// `CollectionChange.moves`); empty for a first result.
    let moves: [Changeset.Move]
    /// For a window of a live query (`Results.window(_:)`): where its rows
    /// are in the whole result, and how many rows that has; nil otherwise.
    public let window: WindowPosition?

    init(tree: OrderedTree<Void>, rows: SnapshotRows<Element>, moves: [Changeset.Move] = [], window: WindowPosition? = nil) {
        self.tree = tree
        self.rows = rows
        self.moves = moves
        self.window = window
    }

    /// A snapshot of elements held in memory, in order.
    init(elements: [Element]) {
        var builder = OrderedTree<Void>.Builder(order: SortOrder(terms: []))
        var held: [Int64: Element] = [:]
        held.reserveCapacity(elements.count)
        for (offset, element) in elements.enumerated() {
            let rowID = Int64(offset)
            builder.append((), key: SortKey(first: SortValue.integer(rowID), rest: [], rowID: rowID))
            held[rowID] = element
        }
        self.init(tree: builder.finish(),
                  rows: SnapshotRows(source: ElementSource(sql: "", tableName: "", decode: { _ in throw StoreError(code: .internal, message: "not read") }),
                                     pin: nil, held: held))
    }

    /// The same elements, reached by these moves.
    func with(moves: [Changeset.Move]) -> ResultsSnapshot {
        ResultsSnapshot(tree: tree, rows: rows, moves: moves, window: window)
    }

    /// How many decoded elements a snapshot caches, at most.
    public static var cacheLimit: Int { SnapshotRows<Element>.cacheLimit }

    /// 0.
    public var startIndex: Int { 0 }
    /// The number of elements.
    public var endIndex: Int { tree.count }

    /// The element at a position.
    ///
    /// A read that fails stops the program, as an index out of bounds does:
    /// the disk failed (an I/O error), or a row of the snapshot was deleted
    /// by a writer that bypassed the change log's triggers in the same look
    /// as a logged commit (a commit that logs nothing is re-read, so its
    /// deletions never reach a snapshot). Use ``element(at:)`` to get the
    /// error instead.
    ///
    /// - Complexity: O(log n), plus one read by rowid when not cached.
    ///
    /// - Parameter position: the element's index, from 0.
    public subscript(position: Int) -> Element {
        precondition(position >= 0 && position < tree.count, "Index out of bounds")
        do {
            return try element(at: position)
        } catch {
            preconditionFailure("cannot read element \(position) of a snapshot: \(error)")
        }
    }

    /// The element at a position, or the error that kept it from being read.
    ///
    /// - Throws: `StoreError` when the database cannot be read (an I/O
    ///   error); an index out of bounds is `StoreError.Code.misuse`.
    ///
    /// - Parameter position: the element's index, from 0.
    /// - Returns: the element.
    /// - Complexity: O(log n), plus one read by rowid when not cached.
    public func element(at position: Int) throws -> Element {
        guard position >= 0, position < tree.count else {
            throw StoreError(code: .misuse, message: "index \(position) out of bounds (count \(tree.count))")
        }
        return try rows.element(tree.entry(at: position).key.rowID)
    }

    /// The elements at a range of positions, read together.
    ///
    /// - Throws: as ``element(at:)``.
    ///
    /// - Parameter range: the positions.
    /// - Returns: the elements, in order.
    /// - Complexity: O(m log n) for m elements, and one read per element not cached.
    public func elements(in range: Range<Int>) throws -> [Element] {
        guard range.lowerBound >= 0, range.upperBound <= tree.count else {
            throw StoreError(code: .misuse, message: "range \(range) out of bounds (count \(tree.count))")
        }
        var rowIDs: [Int64] = []
        rowIDs.reserveCapacity(range.count)
        for position in range { rowIDs.append(tree.entry(at: position).key.rowID) }
        return try rows.elements(rowIDs)
    }

    /// Iterates in order, reading a leaf of rows at a time.
    public func makeIterator() -> Iterator {
        Iterator(root: tree.root, rows: rows)
    }

    /// Walks the tree's leaves in order, reading each leaf's elements together.
    public struct Iterator: IteratorProtocol {
        private var stack: [(node: OrderedTree<Void>.Node, index: Int)]
        private let rows: SnapshotRows<Element>
        private var buffer: [Element] = []
        private var offset = 0

        init(root: OrderedTree<Void>.Node, rows: SnapshotRows<Element>) {
            stack = [(root, 0)]
            self.rows = rows
        }

        /// The next element, or nil at the end.
        ///
        /// A read that fails (an I/O error) stops the program, as the subscript does.
        ///
        /// - Returns: the next element, or nil after the last.
        public mutating func next() -> Element? {
            if offset < buffer.count {
                offset += 1
                return buffer[offset - 1]
            }
            while let top = stack.last {
                if top.node.isLeaf {
                    stack.removeLast()
                    guard !top.node.keys.isEmpty else { continue }
                    do {
                        buffer = try rows.elements(top.node.keys.map { $0.rowID })
                    } catch {
                        preconditionFailure("cannot read the elements of a snapshot: \(error)")
                    }
                    offset = 1
                    return buffer[0]
                } else if top.index < top.node.children.count {
                    stack[stack.count - 1].index += 1
                    stack.append((top.node.children[top.index], 0))
                } else {
                    stack.removeLast()
                }
            }
            return nil
        }
    }
}

// Snapshots never mutate the nodes they reference: a live query copies a
// node before changing it whenever the node is shared, and a snapshot holds
// a reference to every node it can reach.
extension ResultsSnapshot: @unchecked Sendable where Element: Sendable {}

extension ResultsSnapshot: Equatable where Element: Equatable {
    /// Element-wise equality.
    public static func == (lhs: ResultsSnapshot, rhs: ResultsSnapshot) -> Bool {
        lhs.count == rhs.count && lhs.elementsEqual(rhs)
    }
}

extension ResultsSnapshot: CustomStringConvertible {
    /// The elements, as an array prints them.
    public var description: String { Array(self).description }
}
