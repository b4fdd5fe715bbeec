/// What one or more commits changed, as observers need to know it: for
/// each table, the rowids that were inserted, updated (old and new rowid)
/// or deleted, or "unknown" when the hooks could not tell; or unknown
/// everywhere, when another connection committed.
struct ChangedRows: Sendable {
    /// How a table changed.
    enum TableChange: Sendable, Equatable {
        /// These rowids changed (each may have been inserted, updated or deleted).
        case rows(Set<Int64>)
        /// Rows changed that the hooks did not name: re-read the table.
        case unknown
    }

    private(set) var tables: [String: TableChange] = [:]
    /// Anything may have changed, in any table but `knownTables` (another
    /// connection committed).
    private(set) var isUnknown = false
    /// With `isUnknown`: the tables (lower-cased) whose changes are known
    /// exactly anyway, from the change log.
    var knownTables: Set<String> = []
    /// Another connection committed and the change log, read on the
    /// snapshot these changes are applied at, says what changed.
    private(set) var readsLog = false
    /// The schema changed: observers re-read their tables' columns first.
    var schemaChanged = false

    /// Nothing changed.
    init() {}

    /// Anything may have changed: another connection or process committed.
    static var unknown: ChangedRows {
        var changes = ChangedRows()
        changes.isUnknown = true
        return changes
    }

    /// Another connection or process committed: what changed is read from
    /// the change log where it can tell, unknown elsewhere.
    static var external: ChangedRows {
        var changes = ChangedRows.unknown
        changes.readsLog = true
        return changes
    }

    /// Whether nothing changed.
    var isEmpty: Bool { !isUnknown && !schemaChanged && tables.isEmpty }

    /// How a table changed, or nil when it did not.
    func change(in table: String) -> TableChange? {
        if schemaChanged { return .unknown }
        if isUnknown, knownTables.isEmpty || !knownTables.contains(table.lowercased()) { return .unknown }
        return tables[table]
    }

    mutating func insert(_ rowIDs: Set<Int64>, in table: String) {
        guard !rowIDs.isEmpty else { return }
        switch tables[table] {
        case .unknown: break
        case .rows(var existing)?:
            tables[table] = nil    // keep the set uniquely referenced while it grows
            existing.formUnion(rowIDs)
            tables[table] = .rows(existing)
        case nil: tables[table] = .rows(rowIDs)
        }
    }

    /// These changes with the log's reading of other connections' commits
    /// in place of "unknown" (the rows this store committed are kept).
    func resolving(_ logged: ChangedRows) -> ChangedRows {
        var own = self
        own.isUnknown = false
        own.readsLog = false
        own.knownTables = []
        var resolved = logged
        resolved.formUnion(own)
        return resolved
    }

    mutating func markUnknown(_ table: String) {
        tables[table] = .unknown
    }

    /// The changes of this commit and a later one together.
    mutating func formUnion(_ other: ChangedRows) {
        switch (isUnknown, other.isUnknown) {
        case (true, true): knownTables.formIntersection(other.knownTables)
        case (false, true): knownTables = other.knownTables
        default: break
        }
        isUnknown = isUnknown || other.isUnknown
        readsLog = readsLog || other.readsLog
        schemaChanged = schemaChanged || other.schemaChanged
        for (table, change) in other.tables {
            switch change {
            case .unknown: markUnknown(table)
            case .rows(let rowIDs): insert(rowIDs, in: table)
            }
        }
    }
}
