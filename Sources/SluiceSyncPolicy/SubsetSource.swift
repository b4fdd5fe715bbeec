import SluiceSyncProtocol

/// A row as a space's current rows hold it: its values, whether it is deleted, and when
/// each column was last written (the clock of the transaction that wrote it).
public struct StoredRow: Sendable {
    /// The table, as the caller named it.
    public var table: String
    public var id: String
    public var values: [String: SyncValue]
    public var deleted: Bool
    public var clocks: [String: Int64]
    /// The values and clocks as the source holds them, not decoded (then `values` and
    /// `clocks` are empty): a page that only passes them on writes them as they are
    /// (``SubsetSource/changedRows(_:since:after:limit:paths:decoding:)``).
    public var stored: Stored?
    /// The number of the transaction that last wrote the row (nil: the source does not say).
    public var seq: Int64?

    /// A row's values and clocks as JSON objects, as ``SyncChange`` encodes them (any
    /// spacing).
    public struct Stored: Sendable {
        public var values: String
        public var clocks: String

        public init(values: String, clocks: String) {
            self.values = values
            self.clocks = clocks
        }
    }

    public init(table: String, id: String, values: [String: SyncValue], deleted: Bool = false, clocks: [String: Int64] = [:]) {
        self.table = table
        self.id = id
        self.values = values
        self.deleted = deleted
        self.clocks = clocks
    }

    /// A row whose values and clocks are kept as stored, not decoded.
    public init(table: String, id: String, stored: Stored, deleted: Bool = false) {
        self.init(table: table, id: id, values: [:], deleted: deleted)
        self.stored = stored
    }
}

/// One consistent reading of a space's current rows, for a page of partial sync: what a
/// round of `RowsRequest` pages reads (PostgreSQL's `sluice_row` in one snapshot, or a
/// dictionary in memory). Tables are named in lower case.
public protocol SubsetSource {
    /// The history's head the rows are at.
    func head() async throws -> Int64
    /// Rows of `table` with ids after `after`, in id order, at most `limit`, that changed
    /// after `since` (deleted ones too) or whose parent along one of `paths` changed after
    /// it; with `since` 0, every live row.
    func changedRows(_ table: String, since: Int64, after: String, limit: Int, paths: [(column: String, parent: String)]) async throws -> [StoredRow]
    /// The same rows; unless `decoding`, each may come as stored (``StoredRow/stored``),
    /// for a page that writes their values without reading them.
    func changedRows(_ table: String, since: Int64, after: String, limit: Int, paths: [(column: String, parent: String)],
                     decoding: Bool) async throws -> [StoredRow]
    /// The rows of `table` with these ids (deleted ones too), in id order, each with its
    /// ``StoredRow/seq`` (without it, a page sends the rows pointed at as before).
    func storedRows(_ table: String, ids: [String]) async throws -> [StoredRow]
    /// The live rows of `table` whose `column` references one of `ids`.
    func liveRows(_ table: String, whose column: String, referencesOneOf ids: [String]) async throws -> [StoredRow]
}

extension SubsetSource {
    /// Decoded rows, always (a source that holds them decoded).
    public func changedRows(_ table: String, since: Int64, after: String, limit: Int, paths: [(column: String, parent: String)],
                            decoding: Bool) async throws -> [StoredRow] {
        try await changedRows(table, since: since, after: after, limit: limit, paths: paths)
    }
}
