/// The tree's invariants, checked by its tests after every operation and by debug builds
/// when a tree is built (swift-collections' `_checkInvariants()` is the model).
extension OrderedTree {
    /// What breaks the tree's invariants, empty when none does: every node's count is the
    /// sum of its children's (a leaf's, its elements'); an internal node's keys are its
    /// children's largest keys; keys ascend strictly in the tree's order; every leaf is at
    /// the same depth; no node but the root is empty; no node is over its capacity.
    func _invariantViolations() -> [String] {
        var violations: [String] = []
        var leafDepth: Int?
        var previous: SortKey?
        func check(_ node: Node, depth: Int, path: String) {
            if node !== root, node.count == 0 { violations.append("\(path): an empty node below the root") }
            for index in node.keys.indices.dropFirst() where !order.less(node.keys[index - 1], node.keys[index]) {
                violations.append("\(path): keys \(index - 1) and \(index) are not in ascending order")
            }
            if node.isLeaf {
                if node.keys.count != node.elements.count || node.count != node.keys.count {
                    violations.append("\(path): \(node.keys.count) keys, \(node.elements.count) elements, count \(node.count)")
                }
                if node.keys.count > Self.leafCapacity { violations.append("\(path): \(node.keys.count) keys, over the leaf capacity") }
                if let leafDepth, leafDepth != depth { violations.append("\(path): a leaf at depth \(depth), others at \(leafDepth)") }
                leafDepth = depth
                for key in node.keys {
                    if let previous, !order.less(previous, key) { violations.append("\(path): a key not above the leaf before it") }
                    previous = key
                }
                return
            }
            guard node.children.count == node.counts.count, node.children.count == node.keys.count else {
                violations.append("\(path): \(node.children.count) children, \(node.counts.count) counts, \(node.keys.count) keys")
                return
            }
            if node.children.count > Self.branchCapacity { violations.append("\(path): \(node.children.count) children, over the branch capacity") }
            if node.count != node.counts.reduce(0, +) { violations.append("\(path): count \(node.count) is not the sum of its children's") }
            for (index, child) in node.children.enumerated() {
                if node.counts[index] != child.count { violations.append("\(path)/\(index): counted \(node.counts[index]), holds \(child.count)") }
                if let last = child.keys.last, order.compare(last, node.keys[index]) != 0 {
                    violations.append("\(path)/\(index): the parent's key is not the child's largest")
                }
                check(child, depth: depth + 1, path: "\(path)/\(index)")
            }
        }
        check(root, depth: 0, path: "root")
        return violations
    }

    /// Stops a debug build when the invariants do not hold; nothing in a release build.
    func _checkInvariants() {
        assert(_invariantViolations().isEmpty, "OrderedTree: \(_invariantViolations().joined(separator: "; "))")
    }
}
