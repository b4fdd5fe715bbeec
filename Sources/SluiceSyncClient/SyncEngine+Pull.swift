import Foundation
import SluiceSyncProtocol
import Sluice

extension SyncEngine {
    // MARK: - Pull

    /// Applies one pulled transaction as one local transaction (author `"sync"`), settling
    /// conflicts with unpushed local values. Merge results are recorded in
    /// `sluice_sync_merge` in the same transaction (so a crash cannot lose them) and
    /// written by ``writeMerges(_:)``, as a local change that is pushed. Returns whether
    /// it recorded any.
    ///
    /// With `again`, the transaction is one quarantined earlier: it is applied now, and the
    /// cursor (past it already) stays where it is.
    @discardableResult
    func apply(_ transaction: SyncTransaction, again: Bool = false, _ db: Database) throws -> Bool {
        guard var state = try loadState(db), let seq = transaction.seq, again || seq > state.cursor else { return false }
        let loaded = state
        db.transactionAuthor = Self.syncAuthor
        state.cursor = max(state.cursor, seq)
        state.clock = state.clock.receiving(transaction.clock)
        if transaction.device == state.device, !again {
            if try isOwn(transaction, db) {
                // Our own push, accepted although we never heard back: no longer pending.
                try save(state, db)
                if transaction.local < 0 {
                    try acknowledgeStamps(Int64.min...transaction.local, head: seq, cursor: seq, db)
                    try uploadPartPulled(transaction, db)
                } else {
                    try pushed(through: transaction.local, head: nil, db)
                }
                return false
            }
            // Another store's, under this store's id (a copy of this file, or a store that
            // claims this id): this store takes a new id and applies it as any other.
            try reidentify(&state, db)
        }
        var context = try beginPull(state, loaded: loaded, db)
        context.seq = seq
        // The local transaction this one becomes is another device's: say whose, once logged.
        db.whenLogged { token in
            try TransactionOrigins(db).record(token.sequence, device: transaction.device, spaceSeq: seq, clock: transaction.clock)
        }
        let writer = ConflictResolver.Remote(clock: transaction.clock, device: transaction.device)
        let replaced = Self.replaced(transaction.changes)
        for change in transaction.changes {
            // A table this device does not sync (the space has more than it): not its business.
            guard let table = tables[change.table.lowercased()] else { continue }
            let name = table.name.lowercased()
            let local = try localID(name, change.id, db)
            switch change.op {
            case .insert:
                if context.retired, try deletedHere(table, gid: change.id, db) { continue }
                guard let values = try localValues(change.values ?? [:], table, gid: change.id, db) else {
                    // Its parent is gone here (deleted by this device, not pushed yet): the row
                    // goes too, everywhere, as the parent's cascade takes it on every device.
                    try fixUp(name, change.id, column: nil, db)
                    continue
                }
                if let local, try currentRow(table, local, db) != nil {
                    try update(table, local, values, db)
                } else {
                    try insert(table, local: try newRowID(local, table, reserved: &context.reserved, db), values, gid: change.id, db)
                }
            case .update:
                guard let local else { continue }
                let key = RowKey(table: name, rowID: local)
                guard try currentRow(table, local, db) != nil else {
                    guard let deleted = context.pending[key]?.deleted else { continue }
                    func merged(_ values: [(String, SQLiteValue)]) -> [String: SQLiteValue] {
                        var all = Dictionary(uniqueKeysWithValues: zip(deleted.columns, deleted.values).map { ($0.0, $0.1) })
                        for (column, value) in values { all[column] = value }
                        return all
                    }
                    let outcome = context.resolver.resolveUpdateOfRowDeletedHere()
                    if outcome == .kept, let values = try localValues(change.values ?? [:], table, gid: change.id, db) {
                        // The update brings back the row this device deleted.
                        try recordRow(.deleteLostToEdit, table: table, rowID: local, gid: change.id, values: nil, deletedHere: true, remote: writer, context, db)
                        var all = merged(values)
                        if let keyColumn = table.keyColumn { all = all.filter { $0.key.lowercased() != keyColumn.lowercased() } }
                        try insert(table, local: local, all.map { ($0.key, $0.value) }, gid: change.id, db)
                        context.pending[key] = nil
                    } else if outcome == .deleted {
                        // The delete here stands: the pulled edit is what was lost (read for the
                        // record only: nothing is fetched or fixed up for a row that stays deleted).
                        let all = merged(try recordedValues(change.values ?? [:], table, db))
                        try recordRow(.editLostToDelete, table: table, rowID: local, gid: change.id, values: Row(columns: Array(all.keys), values: Array(all.values)),
                                      deletedHere: true, remote: writer, context, db)
                    }
                    continue
                }
                guard let values = try localValues(change.values ?? [:], table, gid: change.id, db) else {
                    // It now points at a parent this device deleted: it goes, as the cascade takes it.
                    try db.execute(sql: "DELETE FROM \(quoteIdentifier(table.name)) WHERE rowid = ?", arguments: [.integer(local)])
                    try fixUp(name, change.id, column: nil, db)
                    context.pending[key] = nil
                    continue
                }
                let applied = try settleColumns(values, of: table, key: key, clock: { _ in transaction.clock }, device: transaction.device, &context, db)
                if !applied.isEmpty { try update(table, local, applied, db) }
            case .leave:
                // Only a subset's rows leave (``applyRows``), never a history's.
                continue
            case .delete:
                // Deleted and inserted again by this transaction (`INSERT OR REPLACE`): one row
                // whose values change, as the insert writes them. Deleting it here first would
                // run this device's ON DELETE actions on its own unpushed rows that point at it.
                guard let local, !replaced.contains("\(name) \(change.id)") else { continue }
                try deleteRow(table, local, gid: change.id, by: writer, &context, db)
            }
        }
        try forgetDeleted(transaction.changes, pending: context.pending, db)
        return try finishPull(context, db)
    }

    /// Carries out what the resolver decided for one pulled column of row `key`: the value
    /// joins `applied` and the unpushed one is dropped, or the unpushed one stays, or a merge
    /// result is recorded (written by ``writeMerges(_:)``). Returns whether it recorded one.
    func settle(_ outcome: ConflictResolver.Column, column: String, remote: SQLiteValue, key: RowKey,
                applied: inout [(String, SQLiteValue)], pending: inout [RowKey: PendingRow], _ db: Database) throws -> Bool {
        switch outcome {
        case .keepLocal:
            try keptLocal(key, column: column, db)
            return false
        case .applyRemote:
            applied.append((column, remote))
            pending[key]?.columns[column.lowercased()] = nil
            return false
        case .merge(let value):
            applied.append((column, remote))
            pending[key]?.columns[column.lowercased()] = nil
            try MergeResults(db).record(key.table, key.rowID, column: column, value)
            return true
        }
    }

    /// The rows (`table id`) a transaction deletes and then inserts again.
    static func replaced(_ changes: [SyncChange]) -> Set<String> {
        guard changes.contains(where: { $0.op == .delete }) else { return [] }
        var deleted: Set<String> = []
        var replaced: Set<String> = []
        for change in changes {
            let key = "\(change.table.lowercased()) \(change.id)"
            if change.op == .delete { deleted.insert(key) } else if change.op == .insert, deleted.contains(key) { replaced.insert(key) }
        }
        return replaced
    }

    /// Row ids the unpushed changes name (rows deleted here among them), per table: a pulled
    /// new row must not take one, or it would pass for the row the unpushed change is about.
    static func reservedRowIDs(_ unpushed: [(LoggedTransaction, [LocalChange])]) -> [String: Int64] {
        var reserved: [String: Int64] = [:]
        for (_, changes) in unpushed {
            for change in changes {
                reserved[change.table.lowercased()] = max(reserved[change.table.lowercased()] ?? 0, change.rowID, change.oldRowID ?? 0)
            }
        }
        return reserved
    }

    /// The rowid for a pulled row new here: its mapped one, or past every reserved one
    /// (nil: SQLite picks).
    func newRowID(_ local: Int64?, _ table: LocalTable, reserved: inout [String: Int64], _ db: Database) throws -> Int64? {
        let name = table.name.lowercased()
        guard local == nil, let floor = reserved[name] else { return local }
        let rows = try db.fetchRows(sql: "SELECT max(rowid) FROM \(quoteIdentifier(table.name))")
        let highest: Int64 = if case .integer(let value)? = rows.first?[0] { value } else { 0 }
        let id = max(floor, highest) + 1
        reserved[name] = id
        return id
    }

    /// A pulled delete of the row `local`, settled against its unpushed changes here.
    func deleteRow(_ table: LocalTable, _ local: Int64, gid: String, by writer: ConflictResolver.Remote, _ context: inout PullContext, _ db: Database) throws {
        guard let current = try currentRow(table, local, db) else { return }
        let name = table.name.lowercased()
        let key = RowKey(table: name, rowID: local)
        let changedHere = !(context.pending[key]?.columns.isEmpty ?? true)
        if context.resolver.resolveDelete(ofRowChangedHere: changedHere) == .kept {
            // The unpushed update wins: the row stays, and the next push brings it back everywhere.
            try recordRow(.deleteLostToEdit, table: table, rowID: local, gid: gid, values: nil, deletedHere: false, remote: writer, context, db)
            try Resurrections(db).add(name, local)
            return
        }
        if changedHere {
            try recordRow(.editLostToDelete, table: table, rowID: local, gid: gid, values: current, deletedHere: false, remote: writer, context, db)
        }
        try keepReferences(to: table, local, gid: gid, pending: context.pending, db)
        try db.execute(sql: "DELETE FROM \(quoteIdentifier(table.name)) WHERE rowid = ?", arguments: [.integer(local)])
        context.pending[key] = nil
    }

    /// After a pulled transaction or round: the rowids of the rows it deleted that hold no
    /// row now (the same transaction did not insert the row again) forget their global id, so
    /// that a row made here next on such a rowid is another row, with another global id. A
    /// rowid whose row this device deleted and has not pushed keeps it (the delete is pushed
    /// under it).
    func forgetDeleted(_ changes: [SyncChange], pending: [RowKey: PendingRow], _ db: Database) throws {
        for change in changes where change.op == .delete || change.op == .leave {
            guard let table = tables[change.table.lowercased()] else { continue }
            let name = table.name.lowercased()
            guard let local = try localID(name, change.id, db), try currentRow(table, local, db) == nil,
                  pending[RowKey(table: name, rowID: local)]?.deleted == nil else { continue }
            try forget(name, local, db)
        }
    }

    // MARK: - Quarantine

    /// Whether a pulled transaction that failed with `error` is set aside (its values do not
    /// fit this device: a constraint, a type, a column or table it does not have) rather
    /// than stopping the sync (a busy or full disk, an I/O error: retried as a whole).
    static func isQuarantinable(_ error: StoreError) -> Bool {
        [.constraint, .mismatch, .tooBig, .range, .unknownColumn, .unknownTable, .typeMismatch, .invalidInput].contains(error.code)
    }

    /// Sets aside a pulled transaction this device cannot apply, and moves the cursor past it
    /// (in one transaction: a crash keeps both or neither).
    func quarantine(_ transaction: SyncTransaction, error: StoreError, _ db: Database) throws {
        guard var state = try loadState(db), let seq = transaction.seq, seq > state.cursor else { return }
        state.cursor = seq
        state.clock = state.clock.receiving(transaction.clock)
        try save(state, db)
        try QuarantineTable(db).add(transaction, seq: seq, error: error.message)
        try recordQuarantine(transaction, seq: seq, error: error.message, device: state.device, db)
    }

    /// The quarantined transactions, oldest first, with the error each failed with.
    func quarantined(_ db: Database) throws -> [(transaction: SyncTransaction, error: String, date: Date)] {
        try QuarantineTable(db).entries().map { ($0.transaction, $0.error, $0.date) }
    }

    func quarantinedCount(_ db: Database) throws -> Int {
        try QuarantineTable(db).count()
    }

    /// Drops a quarantined transaction (applied again, or discarded), and its inbox record.
    func release(_ seq: Int64, _ db: Database) throws {
        try QuarantineTable(db).remove(seq)
        try ConflictInbox(db).removeQuarantined(seq: seq)
    }

    /// Records a new error for a quarantined transaction that failed again.
    func requarantine(_ seq: Int64, error: StoreError, _ db: Database) throws {
        try QuarantineTable(db).update(seq, error: error.message)
    }

    /// Before a pulled delete of `parent`'s row `local`: records this device's unpushed
    /// references to it, which the delete's ON DELETE action (CASCADE, SET NULL) is about to
    /// overwrite here. The service has not seen them: they are pushed as written, and the
    /// service applies the same action to them, so every copy ends the same.
    func keepReferences(to parent: LocalTable, _ local: Int64, gid: String, pending: [RowKey: PendingRow], _ db: Database) throws {
        let parentName = parent.name.lowercased()
        for child in tables.values {
            for (column, target) in child.references where target == parentName {
                guard let name = child.info.column(named: column)?.name else { continue }
                let rows = try db.fetchRows(sql: "SELECT rowid FROM \(quoteIdentifier(child.name)) WHERE \(quoteIdentifier(name)) = ?",
                                            arguments: [.integer(local)])
                for row in rows {
                    guard case .integer(let rowID) = row[0],
                          pending[RowKey(table: child.name.lowercased(), rowID: rowID)]?.columns[column]?.value == .integer(local),
                          let childGid = try globalID(child.name.lowercased(), rowID, db) else { continue }
                    try FixUps(db).keep(child.name.lowercased(), childGid, column: name, pointingAt: gid)
                }
            }
        }
    }

    func hasFixUps(_ db: Database) throws -> Bool {
        try !FixUps(db).isEmpty()
    }

    /// Writes the recorded merge results as one local transaction (author `"sync-merge"`,
    /// pushed like any local change); false when there were none.
    @discardableResult
    func writeMerges(_ db: Database) throws -> Bool {
        let merges = MergeResults(db)
        let entries = try merges.entries()
        guard !entries.isEmpty else { return false }
        db.transactionAuthor = Self.mergeAuthor
        for entry in entries {
            guard let table = tables[entry.table], try currentRow(table, entry.local, db) != nil else { continue }
            try update(table, entry.local, [(entry.column, entry.value)], db)
        }
        try merges.removeAll()
        return true
    }

    /// Wire values → local values in the table's column order, checked against this
    /// device's schema; nil when a NOT NULL foreign key points at a row this device does not
    /// have (deleted here). A nullable one becomes NULL, and the row `gid` is fixed up the
    /// same way everywhere.
    ///
    /// The order matters for speed: the statements built from these values are cached by
    /// their text, and a dictionary's order differs from one instance to the next (with the
    /// demo's 8 person columns, nearly every pulled row made a new statement to prepare).
    func localValues(_ values: [String: SyncValue], _ table: LocalTable, gid row: String, _ db: Database) throws -> [(String, SQLiteValue)]? {
        var result: [(String, SQLiteValue)] = []
        result.reserveCapacity(values.count)
        let ordered = values.map { (position: table.position($0.key), name: $0.key, value: $0.value) }.sorted { $0.position < $1.position }
        for (_, name, value) in ordered {
            guard let column = table.info.column(named: name) else {
                throw StoreError(code: .unknownColumn, message: "sync: pulled a value for \(table.name).\(name), a column this device does not have")
            }
            if !table.attachments.isEmpty {
                if case .attachment = value {} else { try pulledPlainValue(table, column: column.name, gid: row, db) }
            }
            switch value {
            case .attachment(let attachment): result.append((column.name, try localAttachment(attachment, table, column: column.name, gid: row, db)))
            case .null: result.append((column.name, .null))
            case .integer(let value): result.append((column.name, .integer(value)))
            case .real(let value): result.append((column.name, .real(value)))
            case .text(let value): result.append((column.name, .text(value)))
            case .blob(let value): result.append((column.name, .blob(value)))
            case .reference(let gid):
                guard let parent = table.references[column.name.lowercased()] else {
                    throw StoreError(code: .typeMismatch, message: "sync: pulled a reference for \(table.name).\(column.name), which is not a foreign key here")
                }
                if let local = try localID(parent, gid, db), try tables[parent].map({ try currentRow($0, local, db) != nil }) ?? false {
                    result.append((column.name, .integer(local)))
                } else if column.isNotNull {
                    return nil
                } else {
                    result.append((column.name, .null))
                    try fixUp(table.name.lowercased(), row, column: column.name, db)
                }
            }
        }
        return result
    }

    /// Records a change to push for a row whose reference this device cannot resolve:
    /// its deletion (`column` nil), or NULL for `column`.
    func fixUp(_ table: String, _ gid: String, column: String?, _ db: Database) throws {
        try FixUps(db).add(table, gid, column: column)
    }

    func insert(_ table: LocalTable, local: Int64?, _ values: [(String, SQLiteValue)], gid: String, _ db: Database) throws {
        var columns = values.map { quoteIdentifier($0.0) }
        var arguments = values.map(\.1)
        if let local {
            columns.append(table.keyColumn.map(quoteIdentifier) ?? "rowid")
            arguments.append(.integer(local))
        }
        let placeholders = Array(repeating: "?", count: columns.count).joined(separator: ", ")
        try db.execute(sql: "INSERT INTO \(quoteIdentifier(table.name)) (\(columns.joined(separator: ", "))) VALUES (\(placeholders))", arguments: arguments)
        try IdentityMap(db).map(table.name.lowercased(), local: db.lastInsertedRowID, to: gid, pulled: true)
    }

    func update(_ table: LocalTable, _ local: Int64, _ values: [(String, SQLiteValue)], _ db: Database) throws {
        guard !values.isEmpty else { return }
        let assignments = values.map { "\(quoteIdentifier($0.0)) = ?" }.joined(separator: ", ")
        try db.execute(sql: "UPDATE \(quoteIdentifier(table.name)) SET \(assignments) WHERE rowid = ?", arguments: values.map(\.1) + [.integer(local)])
    }

    /// How many local transactions wait to be pushed.
    func pendingCount(_ db: Database) throws -> Int {
        guard let state = try loadState(db) else { return 0 }
        // Before this store's rows meet the service's, nothing pulled overwrites a local
        // change and no upload floor leaves one out: every local transaction that changed a
        // synced table is pending, counted without reading their changes (a client opened on
        // a store holding a 64 MB attachment decoded it from the log to count one).
        if try !hasMetService(state, db) {
            return try db.countLoggedTransactions(after: state.pushedToken, touching: order.compactMap { tables[$0]?.name }, notBy: Self.syncAuthor)
        }
        return try unpushed(state, db).count
    }
}
