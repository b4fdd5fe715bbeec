import Foundation
import SluiceSyncProtocol
import Sluice

/// The conflict inbox's records, made where each decision is made (the appliers of pulled
/// changes and the quarantine), in the transaction that applies it: a decision and its
/// record commit together or not at all.
extension SyncEngine {
    /// A pulled side, as a record names it: its clock, and its device when the service said
    /// (a subset page's rows name none).
    func side(_ value: SQLiteValue, _ remote: ConflictResolver.Remote) -> SyncConflict.Side {
        SyncConflict.Side(value: value, device: remote.device.isEmpty ? nil : remote.device, clock: remote.clock == .zero ? nil : remote.clock)
    }

    /// Records what settling one pulled column decided against a value, if anything was lost:
    /// the unpushed value here (the pulled one was applied), the pulled one (the value here
    /// stays), or both, under a merge closure's result.
    func recordColumn(_ outcome: ConflictResolver.Column, table: LocalTable, key: RowKey, column: String, local: PendingValue?,
                      remote value: SQLiteValue, from remote: ConflictResolver.Remote, _ context: PullContext, _ db: Database) throws {
        guard let local else { return }
        let own = SyncConflict.Side(value: local.value, device: context.state.device, clock: local.clock)
        let rule = context.resolver.rule(table: table.name, column: column)
        let kind: SyncConflict.Kind
        let kept: SyncConflict.Side
        let lost: SyncConflict.Side
        switch outcome {
        case .applyRemote:
            guard local.value != value else { return }
            (kind, kept, lost) = (.column, side(value, remote), own)
        case .keepLocal:
            guard local.value != value else { return }
            (kind, kept, lost) = (.column, own, side(value, remote))
        case .merge(let merged):
            (kind, kept, lost) = (.merge, SyncConflict.Side(value: merged, device: context.state.device, clock: nil), own)
        }
        try record(SyncConflict(table: table.name, rowID: key.rowID, globalID: try globalID(key.table, key.rowID, db) ?? "", column: column,
                                kind: kind, rule: rule, kept: kept, lost: lost, seq: context.seq), db)
    }

    /// Records a decision about a whole row: an edit that lost to a delete (`values`: the row
    /// as it stood, so that restoring can bring it back), or a delete that lost to an edit.
    func recordRow(_ kind: SyncConflict.Kind, table: LocalTable, rowID: Int64, gid: String, values: Row?,
                   deletedHere: Bool, remote: ConflictResolver.Remote, _ context: PullContext, _ db: Database) throws {
        let own = SyncConflict.Side(value: .null, device: context.state.device,
                                    clock: context.pending[RowKey(table: table.name.lowercased(), rowID: rowID)]?.columns.values.map(\.clock).max())
        let theirs = side(.null, remote)
        // The side that deleted is the one whose delete won (edit lost) or lost (delete lost).
        let lostHere = (kind == .editLostToDelete) != deletedHere
        let rule: SyncConflict.Rule = kind == .editLostToDelete ? .deleteWins : .updateWins
        try record(SyncConflict(table: table.name, rowID: rowID, globalID: gid, column: nil, kind: kind, rule: rule,
                                kept: lostHere ? theirs : own, lost: lostHere ? own : theirs,
                                row: values.map { Dictionary(zip($0.columns, $0.values), uniquingKeysWith: { first, _ in first }) },
                                seq: context.seq), db)
    }

    /// Records a pulled transaction set aside: what it names first, who wrote it, and why.
    func recordQuarantine(_ transaction: SyncTransaction, seq: Int64, error: String, device: String, _ db: Database) throws {
        let first = transaction.changes.first
        let table = first.map { tables[$0.table.lowercased()]?.name ?? $0.table } ?? ""
        let rowID = try first.flatMap { try localID(table.lowercased(), $0.id, db) } ?? 0
        try record(SyncConflict(table: table, rowID: rowID, globalID: first?.id ?? "", column: nil, kind: .quarantined, rule: .schema,
                                kept: SyncConflict.Side(value: .null, device: device, clock: nil),
                                lost: SyncConflict.Side(value: .null, device: transaction.device, clock: transaction.clock),
                                seq: seq, detail: error), db)
    }

    private func record(_ conflict: SyncConflict, _ db: Database) throws {
        try ConflictInbox(db).record(conflict, retention: configuration.conflictRetention)
    }
}

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
            let columns = values.map { quoteIdentifier($0.0) }.joined(separator: ", ")
            let placeholders = Array(repeating: "?", count: values.count).joined(separator: ", ")
            try db.execute(sql: values.isEmpty ? "INSERT INTO \(quoteIdentifier(table.name)) DEFAULT VALUES"
                               : "INSERT INTO \(quoteIdentifier(table.name)) (\(columns)) VALUES (\(placeholders))",
                           arguments: values.map(\.1))
        }
        try ConflictInbox(db).remove(id)
        return merged
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
