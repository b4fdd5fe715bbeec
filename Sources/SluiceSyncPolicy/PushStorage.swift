import SluiceSyncProtocol

/// What deciding a push needs of a space's stored history, inside the one transaction the
/// push is decided and appended in: the service's PostgreSQL storage implements it, and so
/// does a history in memory (for the client's tests), so both decide by the same
/// ``PushDecision`` code.
public protocol PushStorage {
    /// Records that `device` pushes with `token`, unless the device is another token's,
    /// and reads what the history holds of a push by `device` with these `clocks`, before the
    /// space is locked (one round trip to a database instead of three); nil when the device
    /// is another token's (as it is now).
    func claim(device: String, token: String, clocks: [Int64]) async throws -> PushFacts?
    /// The clock each of `locals` was sent with by `device` (what it sent, before a clamp).
    func sentClocks(device: String, locals: [Int64]) async throws -> [Int64: Int64]
    /// The stored transactions of devices other than `device` with one of `clocks`.
    func transactions(withClocks clocks: [Int64], notBy device: String) async throws -> [StoredTransaction]
    /// What each transaction after `base` of a device other than `device` wrote, oldest
    /// first, at most `limit` transactions: one footprint per change (a transaction without
    /// changes gives one with no row).
    func footprints(after base: Int64, limit: Int64, notBy device: String) async throws -> [ChangeFootprint]
    /// The history's head and how far it is pruned; with `forAppend`, the space is locked
    /// for appending until the transaction ends.
    func headAndPruned(forAppend: Bool) async throws -> (head: Int64, pruned: Int64)
    /// Appends `fresh` (decided to go on top of `head`, each with the clock to store and,
    /// when that was clamped, the device's as `sent`): checks and folds them, applies the
    /// service's own rules, moves the head. A refusal is the failure.
    func append(_ fresh: [SyncTransaction], device: String, after head: Int64) async throws -> Result<PushResponse, SyncErrorBody>
}

/// What a push's decision reads of the history before it locks the space.
public struct PushFacts: Sendable, Equatable {
    /// The largest number the device pushed under (nil: none).
    public var lastLocal: Int64?
    /// The history's head as it is now (not locked: a push may commit after it).
    public var head: Int64
    /// Whether a transaction of another device is stored with one of the push's clocks
    /// (then ``PushStorage/transactions(withClocks:notBy:)`` says which).
    public var othersShareAClock: Bool

    public init(lastLocal: Int64?, head: Int64, othersShareAClock: Bool) {
        self.lastLocal = lastLocal
        self.head = head
        self.othersShareAClock = othersShareAClock
    }
}

/// A transaction as the history stores it.
public struct StoredTransaction: Sendable {
    public var device: String
    public var local: Int64
    public var clock: Int64
    public var changes: [SyncChange]

    public init(device: String, local: Int64, clock: Int64, changes: [SyncChange]) {
        self.device = device
        self.local = local
        self.clock = clock
        self.changes = changes
    }
}

/// What one change of a stored transaction wrote: its row, its operation, and (for an
/// update) the columns it wrote.
public struct ChangeFootprint: Sendable {
    public var seq: Int64
    public var table: String?
    public var id: String?
    public var op: String?
    public var columns: [String]?

    public init(seq: Int64, table: String?, id: String?, op: String?, columns: [String]?) {
        self.seq = seq
        self.table = table
        self.id = id
        self.op = op
        self.columns = columns
    }

    /// The footprints of stored transactions, as `footprints(after:limit:notBy:)` returns them.
    public static func of(_ transactions: [(seq: Int64, changes: [SyncChange])]) -> [ChangeFootprint] {
        transactions.flatMap { seq, changes -> [ChangeFootprint] in
            guard !changes.isEmpty else { return [ChangeFootprint(seq: seq, table: nil, id: nil, op: nil, columns: nil)] }
            return changes.map { change in
                ChangeFootprint(seq: seq, table: change.table, id: change.id, op: change.op.rawValue, columns: change.values.map { Array($0.keys) })
            }
        }
    }
}
