import Foundation

/// One row's change inside a synced transaction.
public struct SyncChange: Sendable, Hashable, Codable {
    /// What happened to the row.
    public enum Operation: String, Sendable, Hashable, Codable {
        /// The row was created (or created again after a delete): `values` holds every column.
        case insert
        /// Some columns changed: `values` holds their new values.
        case update
        /// The row was deleted.
        case delete
        /// The row left a device's subset (``RowsResponse`` only): it is removed there and
        /// stays everywhere else.
        case leave
    }

    /// The table, as the registered schema names it.
    public var table: String
    /// The row's global id (the same on every device).
    public var id: String
    /// The operation.
    public var op: Operation
    /// Column values (none for a delete); foreign keys as `.reference(globalID)`.
    public var values: [String: SyncValue]?
    /// When each column's value was written, as raw hybrid logical clocks (a
    /// ``RowsResponse``'s rows only: a history's changes take their transaction's clock).
    public var clocks: [String: Int64]?

    /// A change.
    ///
    /// - Parameters:
    ///   - table: the table, as the registered schema names it.
    ///   - id: the row's global id.
    ///   - op: what happened to the row.
    ///   - values: the column values (nil for a delete).
    ///   - clocks: when each column's value was written (rows of a ``RowsResponse`` only).
    public init(table: String, id: String, op: Operation, values: [String: SyncValue]? = nil, clocks: [String: Int64]? = nil) {
        self.table = table
        self.id = id
        self.op = op
        self.values = values
        self.clocks = clocks
    }
}

/// A device's committed transaction, as pushed and as pulled.
public struct SyncTransaction: Sendable, Hashable, Codable {
    /// Its place in the space's history, given by the service (nil in a push).
    public var seq: Int64?
    /// The device that wrote it (set by the service from the push, never taken from the body).
    public var device: String
    /// The device's own number for it (its change-log sequence): a retried push carries
    /// the same numbers, and the service appends each only once.
    public var local: Int64
    /// When it was committed, by the writing device's hybrid logical clock (in a pull: as
    /// the service bounded it, never later than the service's own clock when it took it).
    public var clock: HybridClock
    /// In a pull, the clock the device pushed when the service bounded it (nil otherwise):
    /// how the device recognizes its own transaction.
    public var sent: HybridClock?
    /// Its row changes, in the order they were made.
    public var changes: [SyncChange]

    /// A transaction.
    ///
    /// - Parameters:
    ///   - seq: its place in the space's history (nil in a push).
    ///   - device: the device that wrote it.
    ///   - local: the device's own number for it.
    ///   - clock: when it was committed, by the device's hybrid logical clock.
    ///   - sent: in a pull, the clock the device pushed (nil otherwise).
    ///   - changes: its row changes, in order.
    public init(seq: Int64? = nil, device: String, local: Int64, clock: HybridClock, sent: HybridClock? = nil, changes: [SyncChange]) {
        self.seq = seq
        self.device = device
        self.local = local
        self.clock = clock
        self.sent = sent
        self.changes = changes
    }
}

/// `POST /v1/push`: a device's transactions, written on top of the history it has pulled.
public struct PushRequest: Sendable, Hashable, Codable {
    /// The pushing device's id.
    public var device: String
    /// The last sequence the device has pulled (and rebased its transactions onto).
    public var base: Int64
    /// The transactions, oldest first.
    public var transactions: [SyncTransaction]

    /// A push.
    ///
    /// - Parameters:
    ///   - device: the pushing device's id.
    ///   - base: the last sequence the device has pulled.
    ///   - transactions: the transactions, oldest first.
    public init(device: String, base: Int64, transactions: [SyncTransaction]) {
        self.device = device
        self.base = base
        self.transactions = transactions
    }
}

/// The answer to an accepted push.
public struct PushResponse: Sendable, Hashable, Codable {
    /// The sequence of the push's last transaction (the history's head after the push,
    /// unless the service added a transaction of its own after it); the device's new cursor
    /// when it appended anything (nothing can come between its base and its own transactions).
    public var head: Int64
    /// How many transactions were appended (fewer than pushed when a retry repeats
    /// transactions the service already has).
    public var appended: Int
    /// How many of the appended transactions carried a clock ahead of the service's own,
    /// and were stored with the service's clock instead (nil for none): the device's clock
    /// is wrong.
    public var clamped: Int?
    /// The history's head when the service appended transactions of its own after the push
    /// (the parents' ON DELETE actions it took), nil when it did not: the device pulls them
    /// before its sync ends. (Services before this field send none.)
    public var followedBy: Int64?
    /// Whether the service takes the parts of a device's first upload only in their order
    /// (answering `out_of_order` to one that overtook the part before it) and checks a part
    /// against what other devices pushed alone: then a device may send its next part before
    /// this one is answered, on the same base. (Services before this field send none.)
    public var keepsUploadOrder: Bool?

    /// A response.
    ///
    /// - Parameters:
    ///   - head: the sequence of the push's last transaction.
    ///   - appended: how many transactions were appended.
    ///   - clamped: how many carried a clock ahead of the service's (nil for none).
    ///   - followedBy: the history's head after the service's own transactions that follow
    ///     the push (nil for none).
    ///   - keepsUploadOrder: whether the service keeps a first upload's parts in order.
    public init(head: Int64, appended: Int, clamped: Int? = nil, followedBy: Int64? = nil, keepsUploadOrder: Bool? = nil) {
        self.head = head
        self.appended = appended
        self.clamped = clamped
        self.followedBy = followedBy
        self.keepsUploadOrder = keepsUploadOrder
    }
}

/// `GET /v1/pull?since=N&limit=M`: the history after `since`.
public struct PullResponse: Sendable, Hashable, Codable {
    /// Transactions after `since`, oldest first, each with its `seq`.
    public var transactions: [SyncTransaction]
    /// The history's head when the page was read: more to pull while the last
    /// transaction's `seq` is below it.
    public var head: Int64

    /// A page.
    ///
    /// - Parameters:
    ///   - transactions: the transactions after `since`, oldest first.
    ///   - head: the history's head when the page was read.
    public init(transactions: [SyncTransaction], head: Int64) {
        self.transactions = transactions
        self.head = head
    }
}

/// The body of every error response: a stable code and a sentence for people.
public struct SyncErrorBody: Sendable, Hashable, Codable, Error, CustomStringConvertible {
    /// `unauthorized`, `behind`, `identity_conflict`, `invalid`, `too_large`,
    /// `rate_limited`, `unavailable`, ...
    public var error: String
    /// What was wrong, naming the table, column or field at fault.
    public var message: String

    /// An error body.
    ///
    /// - Parameters:
    ///   - error: the stable code.
    ///   - message: what was wrong, naming the table, column or field at fault.
    public init(error: String, message: String) {
        self.error = error
        self.message = message
    }

    /// An error body with a typed code.
    ///
    /// - Parameters:
    ///   - code: the stable code.
    ///   - message: what was wrong, naming the table, column or field at fault.
    public init(_ code: SyncErrorCode, message: String) {
        self.init(error: code.rawValue, message: message)
    }

    /// The stable code, typed (``SyncErrorCode``): what clients match.
    public var code: SyncErrorCode { SyncErrorCode(rawValue: error) }

    public var description: String { "\(error): \(message)" }
}
