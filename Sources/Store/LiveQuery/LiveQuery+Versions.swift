
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

    /// Reads through `new` what was read through pins at commit `commit`
    /// (the same state: the commit counter names it).
    func repin(at commit: UInt32, to new: ReadPin) {
        func isAtCommit(_ pin: ReadPin?) -> Bool { pin.map { $0 !== new && $0.commit == commit } ?? false }
        if isAtCommit(statePin) { statePin = new }
        for rows in versions.compactMap({ $0.rows }) where isAtCommit(rows.currentPin) {
            rows.advance(keeping: [:], to: new)
        }
    }

    /// Moves the states held to a commit's read transaction when the commit
    /// changed nothing this query reads.
    func advance(to pin: ReadPin) {
        carryStates(changed: [], to: pin)
    }
}
