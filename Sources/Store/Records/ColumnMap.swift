import SluiceNaming

/// Maps coding keys to column (or parameter) indices, fast.
///
/// Synthesized `Codable` conformances visit keys in the same order for every
/// value, so the map remembers that order and checks the expected key first:
/// a comparison of two small strings instead of a hash lookup.
///
/// The learned order lives in manually allocated buffers: this sits on the
/// per-column path of every fetch and insert, where array retain/release and
/// exclusivity checks showed up in profiles.
final class ColumnMap {
    private let indexByName: [String: Int32]
    private let capacity: Int
    private let expectedNames: UnsafeMutablePointer<String>
    private let expectedIndices: UnsafeMutablePointer<Int32>
    private var learnedCount = 0
    private var cursor = 0
    private var learning = true

    init(names: [String]) {
        var indexByName: [String: Int32] = [:]
        for (offset, name) in names.enumerated() where indexByName[name] == nil {
            indexByName[name] = Int32(offset)
        }
        // SQLite column names are case-insensitive: accept any ASCII case.
        for (offset, name) in names.enumerated() where indexByName[name.lowercased()] == nil {
            indexByName[name.lowercased()] = Int32(offset)
        }
        self.indexByName = indexByName
        capacity = max(names.count, 1)
        expectedNames = .allocate(capacity: capacity)
        expectedIndices = .allocate(capacity: capacity)
    }

    deinit {
        expectedNames.deinitialize(count: learnedCount)
        expectedNames.deallocate()
        expectedIndices.deallocate()
    }

    /// Call before visiting a new value's keys.
    @inline(__always)
    func startValue() {
        if cursor > 0 { learning = false }
        cursor = 0
    }

    /// The index for a key, or nil when no column has that name.
    @inline(__always)
    func index(of name: String) -> Int32? {
        let position = cursor
        cursor = position + 1
        if position < learnedCount, expectedNames[position] == name {
            return expectedIndices[position]
        }
        return slowIndex(of: name, at: position)
    }

    private func slowIndex(of name: String, at position: Int) -> Int32? {
        guard let index = indexByName[name] ?? indexByName[name.lowercased()] ?? indexByName[ColumnNaming.snakeCase(name)] else { return nil }
        if learning, position == learnedCount, learnedCount < capacity {
            (expectedNames + learnedCount).initialize(to: name)
            expectedIndices[learnedCount] = index
            learnedCount += 1
        }
        return index
    }

    /// Whether the name is a column, without moving the cursor.
    func contains(_ name: String) -> Bool {
        indexByName[name] != nil || indexByName[name.lowercased()] != nil || indexByName[ColumnNaming.snakeCase(name)] != nil
    }
}
