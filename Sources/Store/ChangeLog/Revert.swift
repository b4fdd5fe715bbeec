/// Writes the inverse of a logged transaction, in the caller's transaction,
/// after checking which rows later changes touched since: all of it when
/// nothing did; otherwise nothing (an error naming every such row), or,
/// when asked, the rest (`skippingChanged`).
struct Revert {
    let transaction: LoggedTransaction

    /// The rows of one table that one lineage of changes wrote (a row, through
    /// its rowid changes): what the transaction left, and what it changed.
    private struct Final {
        var change: RowChange
        var values: [String: SQLiteValue]
        var exists: Bool
        /// Whether every change of the lineage is an update (then a later
        /// change to one column leaves the others revertible).
        var onlyUpdates = true
        /// Whether the lineage began with an insert: reverting it deletes the row.
        var inserted = false
        /// The row as it is now, read by `changedSince`.
        var current: Row?
    }

    /// Writes the inverse. Returns what later changes kept it from reverting
    /// (empty unless `skippingChanged`: then those rows, or the columns of
    /// updated rows, are left as they are and the rest is reverted).
    ///
    /// - Throws: `.conflict` naming every row a later change touched, when
    ///   not `skippingChanged` (nothing is written).
    @discardableResult
    func run(_ db: Database, skippingChanged: Bool = false) throws -> [RevertConflict] {
        // The log may list a parent's delete before its cascaded children's:
        // foreign keys are checked at COMMIT, when every row is back.
        try db.execute(sql: "PRAGMA defer_foreign_keys = ON")
        let (lineages, conflicts) = try changedSince(db)
        if !conflicts.isEmpty, !skippingChanged {
            let list = conflicts.map { "\($0.table) \($0.key) (\($0.operation.rawValue)): \($0.reason)" }.joined(separator: "; ")
            throw StoreError(code: .conflict, message: "cannot revert transaction \(transaction.token): "
                             + "\(conflicts.count == 1 ? "a row was" : "\(conflicts.count) rows were") changed since: \(list)")
        }
        var skippedRows: Set<Int> = []
        var skippedColumns: [Int: Set<String>] = [:]
        for conflict in conflicts {
            if let column = conflict.column { skippedColumns[conflict.lineage, default: []].insert(column.lowercased()) } else { skippedRows.insert(conflict.lineage) }
        }
        for (index, change) in transaction.changes.enumerated().reversed() {
            let lineage = lineages[index]
            guard !skippedRows.contains(lineage) else { continue }
            let info = try db.tableInfo(change.table)
            guard info.kind == .table else {
                throw StoreError(code: .unsupportedTable, message: "cannot revert changes to \(info.name): it is a \(info.kind.rawValue)")
            }
            let table = quoteIdentifier(info.name)
            switch change.operation {
            case .insert:
                // Gone already only when a cascade of this revert removed it (checked before).
                try db.execute(sql: "DELETE FROM \(table) WHERE rowid = ?", arguments: [.integer(change.rowID)])
            case .update:
                guard let old = change.old, !old.columns.isEmpty || change.oldRowID != nil else { continue }
                let skipped = skippedColumns[lineage] ?? []
                let kept = zip(old.columns, old.values).filter { !skipped.contains($0.0.lowercased()) }
                var assignments = kept.map { "\(quoteIdentifier($0.0)) = ?" }
                var arguments = kept.map(\.1)
                if let oldRowID = change.oldRowID, !info.hasIntegerPrimaryKey {
                    assignments.append("rowid = ?")
                    arguments.append(.integer(oldRowID))
                }
                guard !assignments.isEmpty else { continue }
                try db.execute(sql: "UPDATE \(table) SET \(assignments.joined(separator: ", ")) WHERE rowid = ?", arguments: arguments + [.integer(change.rowID)])
            case .delete:
                guard let old = change.old else { continue }
                let writable = old.columns.filter { name in info.column(named: name).map { !$0.isGenerated } ?? false }
                let columns = ["rowid"] + writable.map(quoteIdentifier)
                let values = [SQLiteValue.integer(change.rowID)] + writable.compactMap { old[$0] }
                let placeholders = Array(repeating: "?", count: columns.count).joined(separator: ", ")
                try db.execute(sql: "INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES (\(placeholders))", arguments: values)
            }
        }
        return conflicts
    }

    /// Before anything is written: each change's lineage (a row through its
    /// rowid changes), and every row that no longer holds what the
    /// transaction left (the last value it wrote to each column), or that it
    /// deleted and that exists again.
    func changedSince(_ db: Database) throws -> (lineages: [Int], conflicts: [RevertConflict]) {
        var finals: [Final] = []
        var current: [String: [Int64: Int]] = [:]    // table → rowid → lineage
        var lineages: [Int] = []
        lineages.reserveCapacity(transaction.changes.count)
        for change in transaction.changes {
            let table = change.table.lowercased()
            let from = change.oldRowID ?? change.rowID
            let lineage: Int
            if let known = current[table]?[from] {
                lineage = known
                current[table]?[from] = nil
            } else {
                lineage = finals.count
                finals.append(Final(change: change, values: [:], exists: false, inserted: change.operation == .insert))
            }
            current[table, default: [:]][change.rowID] = lineage
            lineages.append(lineage)
            finals[lineage].change = change
            finals[lineage].onlyUpdates = finals[lineage].onlyUpdates && change.operation == .update
            switch change.operation {
            case .insert, .update:
                finals[lineage].exists = true
                if let new = change.new { for (column, value) in zip(new.columns, new.values) { finals[lineage].values[column] = value } }
            case .delete:
                finals[lineage].values = [:]
                finals[lineage].exists = false
            }
        }
        var conflicts: [RevertConflict] = []
        for (lineage, final) in finals.enumerated() {
            let info = try db.tableInfo(final.change.table)
            let rowID = final.change.rowID
            func conflict(_ column: String?, _ reason: String) -> RevertConflict {
                RevertConflict(table: info.name, key: final.change.key, operation: final.change.operation, column: column, reason: reason, lineage: lineage)
            }
            let row = try db.fetchRows(sql: "SELECT * FROM \(quoteIdentifier(info.name)) WHERE rowid = ?", arguments: [.integer(rowID)]).first
            finals[lineage].current = row
            guard final.exists else {
                if row != nil { conflicts.append(conflict(nil, "a row with rowid \(rowID) exists again")) }
                continue
            }
            guard let row else {
                conflicts.append(conflict(nil, "it was deleted later"))
                continue
            }
            var changed: [RevertConflict] = []
            for (column, value) in final.values.sorted(by: { $0.key < $1.key }) {
                guard let now = row[column] else {
                    changed.append(conflict(column, "its column '\(column)' no longer exists"))
                    continue
                }
                if now != value {
                    changed.append(conflict(column, "column '\(column)' was changed later (it is \(Database.preview(now)) now; the transaction set \(Database.preview(value)))"))
                }
            }
            // Only an updated row can keep some columns and revert the others.
            if !final.onlyUpdates, let first = changed.first {
                conflicts.append(RevertConflict(table: first.table, key: first.key, operation: first.operation, column: nil, reason: first.reason, lineage: lineage))
            } else {
                conflicts += changed
            }
        }
        conflicts += try referencedDeletions(finals, at: current, leaving: Set(conflicts.map(\.lineage)), db)
        return (lineages, conflicts)
    }

    /// The rows the revert would delete (the transaction inserted them) that rows it does not
    /// delete point at: a later transaction's, or one this revert leaves as it is. Deleting
    /// them would run those rows' ON DELETE actions (CASCADE, SET NULL) and undo later changes.
    private func referencedDeletions(_ finals: [Final], at positions: [String: [Int64: Int]], leaving kept: Set<Int>,
                                     _ db: Database) throws -> [RevertConflict] {
        var kept = kept
        var found: [RevertConflict] = []
        let children = try db.tableNames().compactMap { name -> TableInfo? in
            let info = try db.tableInfo(name)
            return info.foreignKeys.isEmpty ? nil : info
        }
        guard !children.isEmpty else { return [] }
        var changed = true
        while changed {
            changed = false
            for (lineage, final) in finals.enumerated() where final.inserted && final.exists && !kept.contains(lineage) {
                guard let row = final.current else { continue }
                let parent = try db.tableInfo(final.change.table)
                search: for child in children {
                    for key in child.foreignKeys where key.parentTable.lowercased() == parent.name.lowercased() {
                        let parentColumn = key.parentColumn ?? (parent.identityIsRowID ? nil : parent.primaryKey.first)
                        let value: SQLiteValue = parentColumn.flatMap { row[$0] } ?? .integer(final.change.rowID)
                        let pointing = try db.fetchRows(sql: "SELECT rowid FROM \(quoteIdentifier(child.name)) WHERE \(quoteIdentifier(key.column)) = ?", arguments: [value])
                        for pointer in pointing {
                            guard case .integer(let rowID) = pointer[0] else { continue }
                            // A row this revert deletes too is no reason to keep this one.
                            if let other = positions[child.name.lowercased()]?[rowID], finals[other].inserted, finals[other].exists, !kept.contains(other) { continue }
                            found.append(RevertConflict(table: parent.name, key: final.change.key, operation: final.change.operation, column: nil,
                                                        reason: "\(child.name) row \(rowID) points at it", lineage: lineage))
                            kept.insert(lineage)
                            changed = true
                            break search
                        }
                    }
                }
            }
        }
        return found
    }
}

/// A row (or one column of it) that a later transaction changed since the
/// one being reverted wrote it: reverting it would undo the later change.
public struct RevertConflict: Sendable, Hashable, CustomStringConvertible {
    /// The table, as named in the schema.
    public let table: String
    /// The row's key, as the log names it.
    public let key: SQLiteValue
    /// What the reverted transaction last did to the row.
    public let operation: RowChange.Operation
    /// The column changed since (nil: the whole row is left as it is).
    public let column: String?
    /// What changed, in words.
    public let reason: String
    /// The lineage of changes it belongs to, inside `Revert`.
    let lineage: Int

    public var description: String { "\(table) \(key)\(column.map { ".\($0)" } ?? ""): \(reason)" }
}
