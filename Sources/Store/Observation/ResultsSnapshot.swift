/// The elements of a live query after one commit: an immutable,
/// random-access collection (like Realm's `Results` in a change
/// notification, but frozen: it never changes after you receive it).
///
/// It shares storage with the live query's other snapshots, so producing
/// one after a commit that changed k rows costs O(k log n), not a copy of
/// all n elements. Reading an element by index is O(log n); iterating is
/// O(1) per element. `Array(snapshot)` makes an array when one is needed.
public struct ResultsSnapshot<Element>: RandomAccessCollection {
    let tree: OrderedTree<Element>
    /// The rows that moved in the commit that led to this snapshot (for
    /// `CollectionChange.moves`); empty for a first result.
    let moves: [Changeset.Move]

    init(tree: OrderedTree<Element>, moves: [Changeset.Move] = []) {
        self.tree = tree
        self.moves = moves
    }

    /// The same elements, reached by these moves.
    func with(moves: [Changeset.Move]) -> ResultsSnapshot {
        ResultsSnapshot(tree: tree, moves: moves)
    }

    /// 0.
    public var startIndex: Int { 0 }
    /// The number of elements.
    public var endIndex: Int { tree.count }

    /// The element at a position.
    ///
    /// - Complexity: O(log n).
    public subscript(position: Int) -> Element {
        precondition(position >= 0 && position < tree.count, "Index out of bounds")
        return tree.entry(at: position).element
    }

    /// Iterates in order, O(1) per element.
    public func makeIterator() -> Iterator {
        Iterator(root: tree.root)
    }

    /// Walks the tree's leaves in order.
    public struct Iterator: IteratorProtocol {
        private var stack: [(node: OrderedTree<Element>.Node, index: Int)]

        init(root: OrderedTree<Element>.Node) {
            stack = [(root, 0)]
        }

        /// The next element, or nil at the end.
        public mutating func next() -> Element? {
            while let top = stack.last {
                if top.node.isLeaf {
                    if top.index < top.node.elements.count {
                        stack[stack.count - 1].index += 1
                        return top.node.elements[top.index]
                    }
                    stack.removeLast()
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
