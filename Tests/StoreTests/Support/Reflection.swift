/// A stored property of `subject`, reached through reflection by its labels
/// (`reflected(store, "tracker", "some", "capture")`): how tests look at
/// internal state (a cache's size, the capture a store chose) without the
/// production types carrying accessors only tests use. Nil when a label is
/// missing or the value is not a `T`.
func reflected<T>(_ subject: Any, _ path: String...) -> T? {
    var current: Any = subject
    for label in path {
        guard let child = Swift.Mirror(reflecting: current).children.first(where: { $0.label == label }) else { return nil }
        current = child.value
    }
    return current as? T
}
