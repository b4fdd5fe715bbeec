/// Maps coding keys to column (or parameter) indices, fast.
///
/// Synthesized `Codable` conformances visit keys in the same order for every
/// value, so the map remembers that order and checks the expected key first:
/// a comparison of two small strings instead of a hash lookup.
struct ColumnMap {
    private let indexByName: [String: Int32]
    private var expectedNames: [String] = []
    private var expectedIndices: [Int32] = []
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
    }

    /// Call before visiting a new value's keys.
    @inline(__always)
    mutating func startValue() {
        if cursor > 0 { learning = false }
        cursor = 0
    }

    /// The index for a key, or nil when no column has that name.
    @inline(__always)
    mutating func index(of name: String) -> Int32? {
        defer { cursor += 1 }
        if cursor < expectedNames.count, expectedNames[cursor] == name {
            return expectedIndices[cursor]
        }
        guard let index = indexByName[name] ?? indexByName[name.lowercased()] else { return nil }
        if learning, cursor == expectedNames.count {
            expectedNames.append(name)
            expectedIndices.append(index)
        }
        return index
    }

    /// Whether the name is a column, without moving the cursor.
    func contains(_ name: String) -> Bool {
        indexByName[name] != nil || indexByName[name.lowercased()] != nil
    }
}
