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
        let id = try record(SyncConflict(table: table.name, rowID: rowID, globalID: gid, column: nil, kind: kind, rule: rule,
                                         kept: lostHere ? theirs : own, lost: lostHere ? own : theirs,
                                         row: values.map { Dictionary(zip($0.columns, $0.values), uniquingKeysWith: { first, _ in first }) },
                                         seq: context.seq), db)
        // A pulled delete's local transaction holds what its ON DELETE actions did here.
        if kind == .editLostToDelete, !deletedHere, let id {
            db.whenLogged { token in try ConflictInbox(db).setApplied(id, sequence: token.sequence) }
        }
    }

    /// Pulled values as a record keeps them, read without side effects: a reference as the
    /// local id of its row (NULL when this device has none), an attachment as NULL (its bytes
    /// are not fetched for a row that stays deleted), a column this device lacks left out.
    func recordedValues(_ values: [String: SyncValue], _ table: LocalTable, _ db: Database) throws -> [(String, SQLiteValue)] {
        try values.compactMap { name, value in
            guard let column = table.info.column(named: name) else { return nil }
            switch value {
            case .reference(let gid):
                let local = try table.references[column.name.lowercased()].flatMap { try localID($0, gid, db) }
                return (column.name, local.map { .integer($0) } ?? .null)
            case .attachment: return (column.name, .null)
            default: return (column.name, value.sqliteValue)
            }
        }
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

    @discardableResult
    private func record(_ conflict: SyncConflict, _ db: Database) throws -> Int64? {
        try ConflictInbox(db).record(conflict, retention: configuration.conflictRetention)
    }
}
