import Foundation

/// How a live query reads one of its rows by rowid: the SQL and the decoder.
struct ElementSource<Element> {
    /// `SELECT rowid, <columns> FROM t WHERE rowid = ?`.
    let sql: String
    let tableName: String
    let decode: (StatementDecoder) throws -> Element

    /// Reads rows on `db`, in the order of `rowIDs`.
    func read(_ rowIDs: [Int64], on db: Database) throws -> [Element] {
        let statement = try db.cachedStatement(sql: sql)
        defer { statement.reset() }
        let decoder = statement.decoder(tableName: tableName)
        var elements: [Element] = []
        elements.reserveCapacity(rowIDs.count)
        for rowID in rowIDs {
            statement.reset()
            try statement.bind([.integer(rowID)])
            guard try statement.step() else {
                throw StoreError(code: .internal, message: "row \(rowID) of table \(tableName) is missing from the snapshot that holds it")
            }
            elements.append(try decode(decoder))
        }
        return elements
    }
}

/// The elements of one state of a live query (what a `ResultsSnapshot`
/// shows), read from the database on access instead of held.
///
/// A state's rows are read through a pinned read transaction (`ReadPin`) of
/// a commit at which none of them differs from the state. After each commit
/// the live query moves the pin forward to the new commit's, first keeping
/// here the values, as they were, of the rows that commit changed (their
/// "before images"). So whichever state an app still holds, only the latest
/// read transaction stays open, and memory grows only by the rows changed
/// since the state was delivered.
///
/// When a commit changes too many rows to keep their old values, the state
/// keeps its own pin instead (`detach`): its read transaction stays open
/// until the last snapshot of it is gone. A state without a pin (a one-off
/// read, not an observation) holds every element.
///
/// Decoded elements are cached, up to `cacheLimit` of them.
final class SnapshotRows<Element>: @unchecked Sendable {
    // @unchecked Sendable: the mutable state is guarded by `lock`; the
    // source is immutable, its decoder pure.
    private let lock = NSLock()
    private let source: ElementSource<Element>
    private var pin: ReadPin?
    /// Rows whose values at this state are known here: changed since (before
    /// images), or every row when there is no pin.
    private var held: [Int64: Element]
    private var cache: [Int64: Element]

    /// Elements cached per state, at most.
    static var cacheLimit: Int { 1024 }

    init(source: ElementSource<Element>, pin: ReadPin?, held: [Int64: Element] = [:], cached: [Int64: Element] = [:]) {
        self.source = source
        self.pin = pin
        self.held = held
        cache = cached
    }

    /// The element of a row of this state.
    func element(_ rowID: Int64) throws -> Element {
        try elements([rowID])[0]
    }

    /// The elements of rows of this state, in the order given.
    func elements(_ rowIDs: [Int64]) throws -> [Element] {
        var found: [Element?] = []
        var missing: [Int64] = []
        var missingAt: [Int] = []
        let pin: ReadPin? = lock.withLock {
            found.reserveCapacity(rowIDs.count)
            for (offset, rowID) in rowIDs.enumerated() {
                if let element = held[rowID] ?? cache[rowID] {
                    found.append(element)
                } else {
                    found.append(nil)
                    missing.append(rowID)
                    missingAt.append(offset)
                }
            }
            return self.pin
        }
        guard !missing.isEmpty else { return try Self.complete(found) }
        guard let pin else {
            throw StoreError(code: .internal, message: "a snapshot of table \(source.tableName) holds no row \(missing[0])")
        }
        // Read without holding the lock: whatever the pin is moved to
        // meanwhile, a row not held when the pin was taken is the same at
        // the pin's state as at this one.
        let read = try pin.read { db in try source.read(missing, on: db) }
        lock.withLock {
            if cache.count + read.count > Self.cacheLimit { cache.removeAll(keepingCapacity: true) }
            for (rowID, element) in zip(missing, read) where held[rowID] == nil { cache[rowID] = element }
        }
        for (offset, element) in zip(missingAt, read) { found[offset] = element }
        return try Self.complete(found)
    }

    private static func complete(_ found: [Element?]) throws -> [Element] {
        let elements = found.compactMap { $0 }
        guard elements.count == found.count else {
            throw StoreError(code: .internal, message: "a snapshot read fewer rows than asked")
        }
        return elements
    }

    // MARK: - Moving forward (observation queue)

    /// The pin reads go through now, if any.
    var currentPin: ReadPin? { lock.withLock { pin } }

    /// Keeps the values at this state of rows a commit changes (those not
    /// kept already), and reads the others at the commit's state from now on.
    func advance(keeping beforeImages: [Int64: Element], to newPin: ReadPin) {
        lock.withLock {
            for (rowID, element) in beforeImages where held[rowID] == nil {
                held[rowID] = element
                cache[rowID] = nil
            }
            pin = newPin
        }
    }
}
