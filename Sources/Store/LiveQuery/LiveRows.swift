/// What a live query holds of each row besides its place in the order:
/// its sort key, content hash, fingerprint and declared identity, by rowid.
///
/// Stored column-wise in slots (a rowid → slot map, an array where rowids
/// are dense, and one array per field, with only the fields the plan
/// needs), so that a million rows cost a few dozen bytes each instead of a
/// dictionary entry of a whole `LiveRowState` (whose size rounds every
/// bucket up).
struct LiveRows {
    /// Slot + 1 by rowid (0: no row), for rowids below `dense.count`: most
    /// tables' rowids are dense, and an array costs 4 bytes a rowid where a
    /// dictionary costs about 25 bytes a row, and no hashing.
    private var dense: ContiguousArray<Int32> = []
    /// Slots of rowids outside `dense` (negative, or far beyond the others).
    private var sparse: [Int64: Int32] = [:]
    private(set) var count = 0
    private var firsts: ContiguousArray<SortValue> = []
    /// Only when sort keys have more than one value.
    private var rests: ContiguousArray<[SortValue]> = []
    private var contents: ContiguousArray<Int> = []
    /// Only when the fingerprint does not cover every column (`keyPaths`);
    /// otherwise it equals the content hash.
    private var fingerprints: ContiguousArray<Int> = []
    /// Only for tables whose identity is a declared key.
    private var identities: [Int32: RowIdentity] = [:]
    private var free: [Int32] = []
    private let keepsRests: Bool
    private let keepsFingerprints: Bool

    /// - Parameter extraTerm: whether sort keys have a value before the
    ///   plan's (a section value).
    init(plan: QueryPlan, extraTerm: Bool = false, capacity: Int = 0) {
        keepsRests = plan.orderColumns.count + (extraTerm ? 1 : 0) > 1
        keepsFingerprints = !plan.fingerprintCoversAll
        reserve(capacity)
    }

    mutating func reserve(_ capacity: Int) {
        guard capacity > 0 else { return }
        firsts.reserveCapacity(capacity)
        contents.reserveCapacity(capacity)
        if keepsRests { rests.reserveCapacity(capacity) }
        if keepsFingerprints { fingerprints.reserveCapacity(capacity) }
    }

    /// The rowids held, in no particular order.
    var rowIDs: [Int64] {
        var ids = Array(sparse.keys)
        ids.reserveCapacity(count)
        for (rowID, slot) in dense.enumerated() where slot != 0 { ids.append(Int64(rowID)) }
        return ids
    }

    private func slot(_ rowID: Int64) -> Int32? {
        if rowID >= 0, rowID < dense.count {
            let stored = dense[Int(rowID)]
            return stored == 0 ? nil : stored - 1
        }
        return sparse[rowID]
    }

    /// Records a row's slot, growing the dense array when the rowid is not far beyond the others.
    private mutating func setSlot(_ slot: Int32, of rowID: Int64) {
        // Dense while the array stays within a few times the rows held (at most ~16 bytes a row then).
        if rowID >= 0, rowID >= dense.count, rowID < 4 * Int64(count) + 65_536 {
            let newCount = Int(rowID) + 1 + Int(rowID) / 2
            dense.append(contentsOf: repeatElement(0, count: newCount - dense.count))
            // Rowids the array now covers move out of the dictionary.
            let moving = sparse.filter { $0.key >= 0 && $0.key < newCount }
            for (sparseID, sparseSlot) in moving {
                dense[Int(sparseID)] = sparseSlot + 1
                sparse[sparseID] = nil
            }
        }
        if rowID >= 0, rowID < dense.count { dense[Int(rowID)] = slot + 1 } else { sparse[rowID] = slot }
    }

    private mutating func removeSlot(of rowID: Int64) -> Int32? {
        guard let found = slot(rowID) else { return nil }
        if rowID >= 0, rowID < dense.count { dense[Int(rowID)] = 0 } else { sparse[rowID] = nil }
        return found
    }

    private func key(_ rowID: Int64, _ slot: Int) -> SortKey {
        SortKey(first: firsts[slot], rest: keepsRests ? rests[slot] : [], rowID: rowID)
    }

    /// Replaces one value of a row's sort key (a score), in place.
    mutating func setSortValue(_ value: SortValue, at offset: Int, of rowID: Int64) {
        guard let found = slot(rowID) else { return }
        if offset == 0 { firsts[Int(found)] = value } else if keepsRests { rests[Int(found)][offset - 1] = value }
    }

    subscript(rowID: Int64) -> LiveRowState? {
        get {
            guard let found = slot(rowID) else { return nil }
            let slot = Int(found)
            let content = contents[slot]
            return LiveRowState(key: key(rowID, slot), fingerprint: keepsFingerprints ? fingerprints[slot] : content,
                                content: content, key_identity: identities[found])
        }
        set {
            guard let state = newValue else {
                guard let slot = removeSlot(of: rowID) else { return }
                count -= 1
                if !identities.isEmpty { identities[slot] = nil }
                firsts[Int(slot)] = .null
                if keepsRests { rests[Int(slot)] = [] }
                free.append(slot)
                return
            }
            let slot: Int32
            if let existing = self.slot(rowID) {
                slot = existing
            } else if let reused = free.popLast() {
                slot = reused
                count += 1
                setSlot(slot, of: rowID)
            } else {
                slot = Int32(firsts.count)
                count += 1
                setSlot(slot, of: rowID)
                firsts.append(.null)
                contents.append(0)
                if keepsRests { rests.append([]) }
                if keepsFingerprints { fingerprints.append(0) }
            }
            let index = Int(slot)
            firsts[index] = state.key.first
            contents[index] = state.content
            if keepsRests { rests[index] = state.key.rest }
            if keepsFingerprints { fingerprints[index] = state.fingerprint }
            // Most tables have no declared key: no dictionary lookup per row then.
            if state.key_identity != nil || !identities.isEmpty { identities[slot] = state.key_identity }
        }
    }
}
