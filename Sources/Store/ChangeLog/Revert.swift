/// Writes the inverse of a logged transaction, in the caller's transaction,
/// after checking that no later change touched the values it wrote.
struct Revert {
    let transaction: LoggedTransaction

    func run(_ db: Database) throws {
        // The log may list a parent's delete before its cascaded children's:
        // foreign keys are checked at COMMIT, when every row is back.
        try db.execute(sql: "PRAGMA defer_foreign_keys = ON")
        try checkNothingChangedSince(db)
        for change in transaction.changes.reversed() {
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
                var assignments = old.columns.map { "\(quoteIdentifier($0)) = ?" }
                var arguments = old.values
                if let oldRowID = change.oldRowID, !info.hasIntegerPrimaryKey {
                    assignments.append("rowid = ?")
                    arguments.append(.integer(oldRowID))
                }
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
    }

    /// Checks, before anything is written, that every row the transaction
    /// left behind still holds what it left (the last value it wrote to
    /// each column), and that rows it deleted have not come back.
    private func checkNothingChangedSince(_ db: Database) throws {
        struct Final { var change: RowChange; var values: [String: SQLiteValue]; var exists: Bool }
        var finals: [String: [Int64: Final]] = [:]
        for change in transaction.changes {
            let table = change.table.lowercased()
            var final = finals[table]?[change.oldRowID ?? change.rowID] ?? Final(change: change, values: [:], exists: false)
            finals[table]?[change.oldRowID ?? change.rowID] = nil
            final.change = change
            switch change.operation {
            case .insert, .update:
                final.exists = true
                if let new = change.new { for (column, value) in zip(new.columns, new.values) { final.values[column] = value } }
            case .delete:
                final = Final(change: change, values: [:], exists: false)
            }
            finals[table, default: [:]][change.rowID] = final
        }
        for (_, rows) in finals {
            for (rowID, final) in rows {
                let info = try db.tableInfo(final.change.table)
                let current = try currentRow(info, rowID: rowID, db)
                if !final.exists {
                    if current != nil { throw conflict(final.change, info, "a row with rowid \(rowID) exists again") }
                    continue
                }
                let written = Row(columns: Array(final.values.keys), values: Array(final.values.values))
                try expect(current, equals: written, final.change, info)
            }
        }
    }

    private func currentRow(_ info: TableInfo, rowID: Int64, _ db: Database) throws -> Row? {
        try db.fetchRows(sql: "SELECT * FROM \(quoteIdentifier(info.name)) WHERE rowid = ?", arguments: [.integer(rowID)]).first
    }

    /// Checks that the row still holds the values the transaction wrote.
    private func expect(_ current: Row?, equals written: Row?, _ change: RowChange, _ info: TableInfo) throws {
        guard let current else { throw conflict(change, info, "it was deleted later") }
        guard let written else { return }
        for (column, value) in zip(written.columns, written.values) {
            guard let now = current[column] else {
                throw conflict(change, info, "its column '\(column)' no longer exists")
            }
            if now != value {
                throw conflict(change, info, "column '\(column)' was changed later (it is \(Database.preview(now)) now; the transaction set \(Database.preview(value)))")
            }
        }
    }

    private func conflict(_ change: RowChange, _ info: TableInfo, _ reason: String) -> StoreError {
        StoreError(code: .conflict, message: "cannot revert transaction \(transaction.token): \(info.name) \(change.key) (\(change.operation.rawValue)): \(reason)")
    }
}
