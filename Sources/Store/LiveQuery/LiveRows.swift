/// What a live query holds of each row besides its place in the order:
/// its sort key, content hash, fingerprint and declared identity, by rowid.
///
/// Stored column-wise in slots (a rowid → slot map and one array per
/// field, with only the fields the plan needs), so that a million rows
/// cost a few dozen bytes each instead of a dictionary entry of a whole
/// `LiveRowState` (whose size rounds every bucket up).
struct LiveRows {
    private var slots: [Int64: Int32] = [:]
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
        slots.reserveCapacity(capacity)
        firsts.reserveCapacity(capacity)
        contents.reserveCapacity(capacity)
        if keepsRests { rests.reserveCapacity(capacity) }
        if keepsFingerprints { fingerprints.reserveCapacity(capacity) }
    }

    var count: Int { slots.count }

    /// The rowids held, in no particular order.
    var rowIDs: Dictionary<Int64, Int32>.Keys { slots.keys }

    private func key(_ rowID: Int64, _ slot: Int) -> SortKey {
        SortKey(first: firsts[slot], rest: keepsRests ? rests[slot] : [], rowID: rowID)
    }

    subscript(rowID: Int64) -> LiveRowState? {
        get {
            guard let found = slots[rowID] else { return nil }
            let slot = Int(found)
            let content = contents[slot]
            return LiveRowState(key: key(rowID, slot), fingerprint: keepsFingerprints ? fingerprints[slot] : content,
                                content: content, key_identity: identities[found])
        }
        set {
            guard let state = newValue else {
                guard let slot = slots.removeValue(forKey: rowID) else { return }
                identities[slot] = nil
                firsts[Int(slot)] = .null
                if keepsRests { rests[Int(slot)] = [] }
                free.append(slot)
                return
            }
            let slot: Int32
            if let existing = slots[rowID] {
                slot = existing
            } else if let reused = free.popLast() {
                slot = reused
                slots[rowID] = slot
            } else {
                slot = Int32(firsts.count)
                slots[rowID] = slot
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
            identities[slot] = state.key_identity
        }
    }
}
