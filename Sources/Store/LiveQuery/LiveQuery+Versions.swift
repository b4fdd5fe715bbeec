
/// The multi-version store: the row states each held snapshot still reads, carried
/// forward as commits change them.
extension LiveQuery {
    // MARK: - States held by snapshots

    /// Before a commit's changes are applied: every state still held keeps
    /// the old values of the rows it changed (read at the current state),
    /// then reads the rest at the commit's state, through `pin`. Past
    /// `beforeImageLimit` rows, or when the rows' columns changed, they keep
    /// their own read transaction instead.
    func carryStates(changed: [Int64], to pin: ReadPin?, detaching: Bool = false) {
        defer {
            statePin = pin
            if !changed.isEmpty || detaching { latest = nil }
        }
        guard let pin, materialized == nil else { return }
        let held = versions.compactMap { $0.rows }
        versions = held.map(WeakRows.init)
        guard !held.isEmpty else { return }
        let present = changed.filter { rows[$0] != nil }
        var images: [Int64: Element] = [:]
        if !present.isEmpty {
            guard !detaching, present.count <= Self.beforeImageLimit, let old = held[0].currentPin, old !== pin,
                  let read = try? old.withDatabase({ db in try source.read(present, on: db) }) else {
                versions = []
                return
            }
            images = Dictionary(uniqueKeysWithValues: zip(present, read))
        } else if detaching {
            versions = []
            return
        }
        for rows in held { rows.advance(keeping: images, to: pin) }
    }

    /// Reads through `new` what was read through `old`, a read transaction at the same state.
    func repin(from old: ReadPin, to new: ReadPin) {
        if statePin === old { statePin = new }
        for rows in versions.compactMap({ $0.rows }) where rows.currentPin === old {
            rows.advance(keeping: [:], to: new)
        }
    }

    /// Moves the states held to a commit's read transaction when the commit
    /// changed nothing this query reads.
    func advance(to pin: ReadPin) {
        carryStates(changed: [], to: pin)
    }
}
