import Foundation
import SluiceSyncProtocol
import Sluice

extension SyncEngine {
    /// The author of the transactions that restore what a conflict lost (pushed).
    static let restoreAuthor = "sync-restore"

    /// Writes back what `conflict` lost and removes its record (``SyncClient/restore(_:)``);
    /// returns whether applying a quarantined transaction again recorded merge results.
    func restore(_ conflict: SyncConflict, _ db: Database) throws -> Bool {
        guard let id = conflict.id else { return false }
        var merged = false
        switch conflict.kind {
        case .quarantined:
            guard let seq = conflict.seq, let entry = try QuarantineTable(db).entries().first(where: { $0.transaction.seq == seq }) else {
                throw StoreError(code: .notFound, message: "conflict \(id): the quarantined transaction \(conflict.seq.map(String.init) ?? "?") is no longer held")
            }
            merged = try apply(entry.transaction, again: true, db)
            try release(seq, db)
        case .column, .merge:
            let table = try restoredTable(conflict)
            guard let column = conflict.column, let name = table.info.column(named: column)?.name else {
                throw StoreError(code: .unknownColumn, message: "conflict \(id): \(table.name) has no column '\(conflict.column ?? "")' now")
            }
            try expectRow(conflict, table, db)
            db.transactionAuthor = Self.restoreAuthor
            try update(table, conflict.rowID, [(name, conflict.lost.value)], db)
        case .deleteLostToEdit:
            let table = try restoredTable(conflict)
            try expectRow(conflict, table, db)
            db.transactionAuthor = Self.restoreAuthor
            try db.execute(sql: "DELETE FROM \(quoteIdentifier(table.name)) WHERE rowid = ?", arguments: [.integer(conflict.rowID)])
        case .editLostToDelete:
            let table = try restoredTable(conflict)
            if let local = try localID(table.name.lowercased(), conflict.globalID, db), try currentRow(table, local, db) != nil {
                throw StoreError(code: .conflict, message: "conflict \(id): \(table.name) row \(conflict.globalID) is here again; nothing to bring back")
            }
            var values: [(String, SQLiteValue)] = []
            for (column, value) in (conflict.row ?? [:]).sorted(by: { table.position($0.key) < table.position($1.key) }) {
                guard let name = table.info.column(named: column)?.name else {
                    throw StoreError(code: .unknownColumn, message: "conflict \(id): \(table.name) has no column '\(column)' now")
                }
                if let key = table.keyColumn, key.lowercased() == name.lowercased() { continue }
                values.append((name, value))
            }
            db.transactionAuthor = Self.restoreAuthor
            try insertRestored(table, values, db)
            if let applied = conflict.appliedSequence {
                try restoreChildren(of: table, conflict.rowID, as: db.lastInsertedRowID, removedIn: applied, db)
            }
        }
        try ConflictInbox(db).remove(id)
        return merged
    }

    /// Inserts a row brought back, as a new row (SQLite picks its id).
    private func insertRestored(_ table: LocalTable, _ values: [(String, SQLiteValue)], _ db: Database) throws {
        let columns = values.map { quoteIdentifier($0.0) }.joined(separator: ", ")
        let placeholders = Array(repeating: "?", count: values.count).joined(separator: ", ")
        try db.execute(sql: values.isEmpty ? "INSERT INTO \(quoteIdentifier(table.name)) DEFAULT VALUES"
                           : "INSERT INTO \(quoteIdentifier(table.name)) (\(columns)) VALUES (\(placeholders))",
                       arguments: values.map(\.1))
    }

    /// Brings back what the ON DELETE actions of a pulled delete of `table`'s row `old` did here
    /// (in the local transaction `sequence`), for the row now back as `new`: rows a CASCADE
    /// removed come back as new rows pointing at it (and theirs at them), references a SET NULL
    /// cleared point at it again when they are still NULL. Nothing when the log no longer
    /// holds that transaction.
    private func restoreChildren(of table: LocalTable, _ old: Int64, as new: Int64, removedIn sequence: Int64, _ db: Database) throws {
        let start = HistoryToken(databaseID: try db.currentHistoryToken().databaseID, sequence: sequence - 1)
        guard let applied = try? db.loggedTransactions(after: start, limit: 1).first, applied.token.sequence == sequence else { return }
        var moved: [String: [Int64: Int64]] = [table.name.lowercased(): [old: new]]
        var waiting = applied.changes.filter { $0.operation != .insert }
        var progress = true
        while progress, !waiting.isEmpty {
            progress = false
            for (index, change) in waiting.enumerated().reversed() {
                guard let child = tables[change.table.lowercased()], let before = change.old else { waiting.remove(at: index); continue }
                // Its references to rows brought back, by column.
                let remapped = child.references.compactMap { column, parent -> (String, Int64)? in
                    guard case .integer(let pointed)? = before[column], let now = moved[parent]?[pointed] else { return nil }
                    return (child.info.column(named: column)?.name ?? column, now)
                }
                guard !remapped.isEmpty else { continue }
                waiting.remove(at: index)
                progress = true
                let targets = Dictionary(remapped, uniquingKeysWith: { first, _ in first })
                if change.operation == .delete {
                    var values: [(String, SQLiteValue)] = []
                    for (column, value) in zip(before.columns, before.values) {
                        guard let info = child.info.column(named: column), !info.isGenerated,
                              child.keyColumn?.lowercased() != info.name.lowercased() else { continue }
                        values.append((info.name, targets[info.name].map { .integer($0) } ?? value))
                    }
                    try insertRestored(child, values, db)
                    moved[child.name.lowercased(), default: [:]][change.rowID] = db.lastInsertedRowID
                } else {
                    for (column, target) in targets where change.new?[column] == .null {
                        try db.execute(sql: "UPDATE \(quoteIdentifier(child.name)) SET \(quoteIdentifier(column)) = ? WHERE rowid = ? AND \(quoteIdentifier(column)) IS NULL",
                                       arguments: [.integer(target), .integer(change.rowID)])
                    }
                }
            }
        }
    }

    private func restoredTable(_ conflict: SyncConflict) throws -> LocalTable {
        guard let table = tables[conflict.table.lowercased()] else {
            throw StoreError(code: .unknownTable, message: "conflict \(conflict.id ?? 0): '\(conflict.table)' is not a synced table of this device")
        }
        return table
    }

    /// The row a record names is still the one it was about (its global id maps to it).
    private func expectRow(_ conflict: SyncConflict, _ table: LocalTable, _ db: Database) throws {
        guard try localID(table.name.lowercased(), conflict.globalID, db) == conflict.rowID, try currentRow(table, conflict.rowID, db) != nil else {
            throw StoreError(code: .conflict, message: "conflict \(conflict.id ?? 0): \(table.name) row \(conflict.globalID) was deleted since")
        }
    }
}
