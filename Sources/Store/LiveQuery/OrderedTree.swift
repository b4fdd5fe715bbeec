/// A persistent B+tree of elements ordered by `SortKey`, with subtree
/// counts: rank, insert, remove and index access in O(log n).
///
/// Persistent means copies share nodes: mutating a copy clones only the
/// nodes on the path it changes (each node is copied on write when it is
/// shared). A live query mutates its tree after every commit while the
/// snapshots it handed out keep seeing the state they were made from, at
/// O(log n) per changed row instead of O(n) for copying an array.
///
/// No package available here offers this (swift-collections' B-tree is an
/// unreleased, source-unstable prototype behind a trait), so it is written
/// for this one purpose and tested against an array model.
struct OrderedTree<Element> {
    final class Node {
        /// Leaf: one key per element. Internal: the largest key of each child.
        var keys: ContiguousArray<SortKey>
        /// Leaf only.
        var elements: ContiguousArray<Element>
        /// Internal only.
        var children: ContiguousArray<Node>
        /// Internal only: the element count of each child.
        var counts: ContiguousArray<Int>
        /// Elements in this subtree.
        var count: Int
        let isLeaf: Bool

        init(leafKeys: ContiguousArray<SortKey>, elements: ContiguousArray<Element>) {
            keys = leafKeys
            self.elements = elements
            children = []
            counts = []
            count = elements.count
            isLeaf = true
        }

        init(children: ContiguousArray<Node>) {
            keys = ContiguousArray(children.compactMap { $0.keys.last })
            elements = []
            self.children = children
            counts = ContiguousArray(children.map { $0.count })
            count = counts.reduce(0, +)
            isLeaf = false
        }

        private init(copying node: Node) {
            keys = node.keys
            elements = node.elements
            children = node.children
            counts = node.counts
            count = node.count
            isLeaf = node.isLeaf
        }

        func copy() -> Node { Node(copying: self) }
    }

    static var leafCapacity: Int { 64 }
    static var branchCapacity: Int { 32 }

    private(set) var root: Node
    let order: SortOrder

    var count: Int { root.count }

    init(order: SortOrder) {
        self.order = order
        root = Node(leafKeys: [], elements: [])
    }

    /// Builds a tree from entries already in order, in O(n).
    init(order: SortOrder, sorted entries: [(key: SortKey, element: Element)]) {
        var builder = Builder(order: order)
        for entry in entries { builder.append(entry.element, key: entry.key) }
        self = builder.finish()
    }

    /// Builds a tree from entries given in order, one at a time, straight
    /// into its leaves (no array of all entries in between): O(n).
    struct Builder {
        let order: SortOrder
        private var leaves: ContiguousArray<Node> = []
        private var keys: ContiguousArray<SortKey> = []
        private var elements: ContiguousArray<Element> = []
        /// Leaves and branches are filled to three quarters, leaving room for inserts.
        private static var chunk: Int { OrderedTree.leafCapacity * 3 / 4 }

        init(order: SortOrder) {
            self.order = order
        }

        /// Appends an entry after all the others (its key must sort after theirs).
        mutating func append(_ element: Element, key: SortKey) {
            if keys.isEmpty {
                keys.reserveCapacity(Self.chunk)
                elements.reserveCapacity(Self.chunk)
            }
            keys.append(key)
            elements.append(element)
            if keys.count == Self.chunk { flush() }
        }

        private mutating func flush() {
            guard !keys.isEmpty else { return }
            leaves.append(Node(leafKeys: keys, elements: elements))
            keys = []
            elements = []
        }

        /// The tree of every entry appended.
        mutating func finish() -> OrderedTree {
            flush()
            var level = leaves
            leaves = []
            guard !level.isEmpty else { return OrderedTree(order: order) }
            let branch = OrderedTree.branchCapacity * 3 / 4
            while level.count > 1 {
                var next: ContiguousArray<Node> = []
                next.reserveCapacity(level.count / branch + 1)
                var index = 0
                while index < level.count {
                    let end = min(index + branch, level.count)
                    next.append(Node(children: ContiguousArray(level[index..<end])))
                    index = end
                }
                level = next
            }
            let tree = OrderedTree(order: order, root: level[0])
            tree._checkInvariants()
            return tree
        }
    }

    private init(order: SortOrder, root: Node) {
        self.order = order
        self.root = root
    }

    // MARK: - Reading

    /// The number of elements whose key sorts before `key`.
    func rank(of key: SortKey) -> Int {
        rank { order.less($0, key) }
    }

    /// The number of elements for which `isBefore` holds, when it holds for
    /// a prefix of the order (a bound on the leading terms, for instance).
    func rank(where isBefore: (SortKey) -> Bool) -> Int {
        var node = root
        var rank = 0
        while !node.isLeaf {
            // The first child whose largest key is not before the bound.
            let child = Self.firstNotBefore(node.keys, upTo: node.keys.count - 1, isBefore)
            for index in 0..<child { rank += node.counts[index] }
            node = node.children[child]
        }
        return rank + Self.firstNotBefore(node.keys, upTo: node.keys.count, isBefore)
    }

    /// Binary search: the first index below `end` whose key `isBefore` rejects (`end` when none).
    private static func firstNotBefore(_ keys: ContiguousArray<SortKey>, upTo end: Int, _ isBefore: (SortKey) -> Bool) -> Int {
        var low = 0, high = end
        while low < high {
            let middle = (low + high) / 2
            if isBefore(keys[middle]) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The element and key at a position.
    func entry(at position: Int) -> (key: SortKey, element: Element) {
        var node = root
        var offset = position
        while !node.isLeaf {
            var child = 0
            while offset >= node.counts[child] {
                offset -= node.counts[child]
                child += 1
            }
            node = node.children[child]
        }
        return (node.keys[offset], node.elements[offset])
    }

    /// Calls `body` with every entry, in order.
    func forEach(_ body: (SortKey, Element) throws -> Void) rethrows {
        try Self.visit(root, body)
    }

    private static func visit(_ node: Node, _ body: (SortKey, Element) throws -> Void) rethrows {
        if node.isLeaf {
            for index in node.keys.indices { try body(node.keys[index], node.elements[index]) }
        } else {
            for child in node.children { try visit(child, body) }
        }
    }

    private func lowerBound(in leaf: Node, _ key: SortKey) -> Int {
        Self.firstNotBefore(leaf.keys, upTo: leaf.keys.count) { order.less($0, key) }
    }

    /// The child that holds (or would hold) `key`: the first whose largest key is not below it.
    private func childIndex(in node: Node, for key: SortKey) -> Int {
        Self.firstNotBefore(node.keys, upTo: node.keys.count - 1) { order.less($0, key) }
    }

    // MARK: - Writing

    private mutating func makeRootUnique() {
        if !isKnownUniquelyReferenced(&root) { root = root.copy() }
    }

    /// Inserts an element whose key is not in the tree; returns its position.
    @discardableResult
    mutating func insert(_ element: Element, key: SortKey) -> Int {
        makeRootUnique()
        let (position, split) = insert(element, key: key, into: root)
        if let split {
            root = Node(children: [root, split])
        }
        return position
    }

    private func insert(_ element: Element, key: SortKey, into node: Node) -> (Int, Node?) {
        if node.isLeaf {
            let position = lowerBound(in: node, key)
            node.keys.insert(key, at: position)
            node.elements.insert(element, at: position)
            node.count += 1
            guard node.keys.count > Self.leafCapacity else { return (position, nil) }
            let half = node.keys.count / 2
            let right = Node(leafKeys: ContiguousArray(node.keys[half...]), elements: ContiguousArray(node.elements[half...]))
            node.keys.removeSubrange(half...)
            node.elements.removeSubrange(half...)
            node.count = node.keys.count
            return (position, right)
        }
        let child = childIndex(in: node, for: key)
        var before = 0
        for index in 0..<child { before += node.counts[index] }
        if !isKnownUniquelyReferenced(&node.children[child]) { node.children[child] = node.children[child].copy() }
        let target = node.children[child]
        let (position, split) = insert(element, key: key, into: target)
        node.counts[child] = target.count
        node.keys[child] = target.keys[target.keys.count - 1]
        node.count += 1
        if let split {
            node.children.insert(split, at: child + 1)
            node.counts.insert(split.count, at: child + 1)
            node.keys.insert(split.keys[split.keys.count - 1], at: child + 1)
            node.counts[child] = target.count
            node.keys[child] = target.keys[target.keys.count - 1]
        }
        guard node.children.count > Self.branchCapacity else { return (before + position, nil) }
        let half = node.children.count / 2
        let right = Node(children: ContiguousArray(node.children[half...]))
        node.children.removeSubrange(half...)
        node.counts.removeSubrange(half...)
        node.keys.removeSubrange(half...)
        node.count = node.counts.reduce(0, +)
        return (before + position, right)
    }

    /// Removes the element with this key; returns its position and the element.
    @discardableResult
    mutating func remove(key: SortKey) -> (position: Int, element: Element)? {
        makeRootUnique()
        guard let removed = remove(key: key, from: root) else { return nil }
        while !root.isLeaf, root.children.count == 1 {
            root = root.children[0]
        }
        if !root.isLeaf, root.children.isEmpty {
            root = Node(leafKeys: [], elements: [])
        }
        return removed
    }

    private func remove(key: SortKey, from node: Node) -> (position: Int, element: Element)? {
        if node.isLeaf {
            let position = lowerBound(in: node, key)
            guard position < node.keys.count, order.compare(node.keys[position], key) == 0 else { return nil }
            node.keys.remove(at: position)
            let element = node.elements.remove(at: position)
            node.count -= 1
            return (position, element)
        }
        guard !node.children.isEmpty else { return nil }
        let child = childIndex(in: node, for: key)
        var before = 0
        for index in 0..<child { before += node.counts[index] }
        if !isKnownUniquelyReferenced(&node.children[child]) { node.children[child] = node.children[child].copy() }
        let target = node.children[child]
        guard let (position, element) = remove(key: key, from: target) else { return nil }
        node.count -= 1
        if target.count == 0 {
            node.children.remove(at: child)
            node.counts.remove(at: child)
            node.keys.remove(at: child)
        } else {
            node.counts[child] = target.count
            node.keys[child] = target.keys[target.keys.count - 1]
        }
        return (before + position, element)
    }

    /// Replaces the element stored under `key`; returns its position.
    @discardableResult
    mutating func replace(_ element: Element, key: SortKey) -> Int? {
        makeRootUnique()
        var node = root
        var position = 0
        while !node.isLeaf {
            let child = childIndex(in: node, for: key)
            for index in 0..<child { position += node.counts[index] }
            if !isKnownUniquelyReferenced(&node.children[child]) { node.children[child] = node.children[child].copy() }
            node = node.children[child]
        }
        let index = lowerBound(in: node, key)
        guard index < node.keys.count, order.compare(node.keys[index], key) == 0 else { return nil }
        node.elements[index] = element
        return position + index
    }
}
