/// The row changes of one transaction of a writing connection, as the
/// `HookBroker` captured them: savepoints already applied (a `ROLLBACK TO`
/// removed what it undid), so it holds exactly what the transaction will
/// commit. The change tracker reads its rowids; the change log writes its
/// entries (GRDB's `DatabaseObservationBroker` keeps the same kind of
/// per-transaction record for its observers).
///
/// With the preupdate hook and values wanted (the change log is on), an
/// update or delete carries the row's values; an insert into a rowid table
/// carries only its rowid (`isByReference`): its values are still in the
/// table at commit, where the log copies them without bringing them into
/// Swift. The first later change to such a row, or a schema change in the
/// transaction, settles its values first. With the update hook, entries
/// carry rowids only, and `untrackedTables` names the tables whose changes
/// the hook may not have reported.
struct CapturedChanges {
    enum Operation: String {
        case insert, update, delete
    }

    struct Entry {
        var table: String
        var operation: Operation
        /// The row's rowid after the change (before it, for a delete).
        var rowID: Int64
        /// The row's rowid before the change (`rowID` unless an update moved it).
        var oldRowID: Int64
        var old: [SQLiteValue]?
        /// Nil for an insert captured by its rowid (its values are in the table).
        var new: [SQLiteValue]?
        /// The table's shape when its schema changed later in the transaction (an index in `shapes`).
        var shape: Int?

        var isByReference: Bool { operation == .insert && new == nil }
    }

    /// Every row change, in the order SQLite made them.
    private(set) var entries: [Entry] = []
    /// Tables' columns as they were before a schema change in this
    /// transaction, for the entries captured before it.
    private(set) var shapes: [TableInfo] = []
    /// Tables whose row changes the hooks may not fully report (update-hook capture).
    private(set) var untrackedTables: Set<String> = []
    /// Whether the transaction wrote a table the change log leaves out (``OwnTables``),
    /// noted whether or not anything records its rows.
    private(set) var touchesUnloggedTable = false

    /// Inserts captured by rowid and not changed since: table → rowid →
    /// index in `entries`, for the entries before `pendingIndexedThrough`
    /// (made only when a later change needs it: a bulk insert never pays).
    private var pendingInserts: [String: [Int64: Int]] = [:]
    private var pendingIndexedThrough = 0
    /// Whether any entry is an insert captured by rowid.
    private var hasByReferenceEntries = false
    /// Entries before this index have their shape (or their table's current one).
    private var shapedThrough = 0

    var isEmpty: Bool { entries.isEmpty && untrackedTables.isEmpty }

    // MARK: - Capturing (inside SQLite's hooks: no SQL)

    mutating func noteUnloggedTable() { touchesUnloggedTable = true }

    /// Appends one row change.
    ///
    /// - Complexity: amortized O(1).
    mutating func append(_ entry: Entry) {
        if entry.isByReference { hasByReferenceEntries = true }
        entries.append(entry)
    }

    /// A row inserted by reference in this transaction is about to change:
    /// its values as inserted are `values` (the change's old values).
    mutating func settleInsert(table: String, rowID: Int64, values: [SQLiteValue]) {
        guard hasByReferenceEntries else { return }
        indexPendingInserts()
        guard let index = pendingInserts[table]?.removeValue(forKey: rowID) else { return }
        entries[index].new = values
    }

    /// Adds the inserts captured by rowid since the last call to `pendingInserts`.
    private mutating func indexPendingInserts() {
        for index in pendingIndexedThrough..<entries.count where entries[index].isByReference {
            pendingInserts[entries[index].table, default: [:]][entries[index].rowID] = index
        }
        pendingIndexedThrough = entries.count
    }

    /// Marks a table whose changes the hooks may not have reported.
    mutating func markUntracked(_ table: String) {
        untrackedTables.insert(table)
    }

    // MARK: - Savepoints

    /// Undoes what was captured after `mark` (an `entries.count` taken when
    /// a savepoint began): `ROLLBACK TO` that savepoint.
    ///
    /// Tables marked untracked stay marked (re-reading a table is never wrong).
    mutating func rollBack(to mark: Int) {
        guard mark < entries.count else { return }
        for entry in entries[mark..<max(mark, pendingIndexedThrough)] where entry.isByReference {
            pendingInserts[entry.table]?.removeValue(forKey: entry.rowID)
        }
        pendingIndexedThrough = min(pendingIndexedThrough, mark)
        entries.removeSubrange(mark...)
        shapedThrough = min(shapedThrough, mark)
        hasByReferenceEntries = hasByReferenceEntries && entries.contains { $0.isByReference }
    }

    /// These changes followed by `later`'s (a commit that failed with its
    /// transaction still open takes its changes back).
    mutating func append(contentsOf later: CapturedChanges) {
        let shapeOffset = shapes.count
        shapes += later.shapes
        entries += later.entries.map { entry in
            var entry = entry
            entry.shape = entry.shape.map { $0 + shapeOffset }
            return entry
        }
        untrackedTables.formUnion(later.untrackedTables)
        touchesUnloggedTable = touchesUnloggedTable || later.touchesUnloggedTable
        hasByReferenceEntries = hasByReferenceEntries || later.hasByReferenceEntries
        pendingInserts = [:]
        pendingIndexedThrough = 0
        shapedThrough = 0
    }

    // MARK: - Before a schema change (outside the hooks: may read)

    /// Before a statement that may drop or reshape tables: reads the values
    /// of every insert still captured by reference, and keeps the shape of
    /// the tables of the entries so far (their values are by column position).
    mutating func keepShapes(_ db: Database) throws {
        guard shapedThrough < entries.count else { return }
        try settlePendingInserts(db)
        var shapeOfTable: [String: Int] = [:]
        for index in shapedThrough..<entries.count where entries[index].shape == nil {
            let table = entries[index].table
            if let known = shapeOfTable[table] {
                entries[index].shape = known
            } else {
                shapes.append(try db.tableInfo(table))
                shapeOfTable[table] = shapes.count - 1
                entries[index].shape = shapes.count - 1
            }
        }
        shapedThrough = entries.count
    }

    private mutating func settlePendingInserts(_ db: Database) throws {
        indexPendingInserts()
        let pending = pendingInserts
        pendingInserts = [:]
        hasByReferenceEntries = false
        for (table, rows) in pending {
            let info = try db.tableInfo(table)
            let statement = try db.connection.cachedStatement(
                sql: "SELECT \(info.columns.map { quoteIdentifier($0.name) }.joined(separator: ", ")) FROM main.\(quoteIdentifier(table)) WHERE rowid = ?")
            defer { statement.reset() }
            for (rowID, index) in rows {
                statement.reset()
                try statement.bind(.integer(rowID), at: 1)
                guard try statement.step() else { continue }
                entries[index].new = (0..<info.columns.count).map { statement.value(at: Int32($0)) }
            }
        }
    }
}
