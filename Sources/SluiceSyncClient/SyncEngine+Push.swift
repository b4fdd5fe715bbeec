import Foundation
import SluiceSyncProtocol
import Sluice

extension SyncEngine {
    // MARK: - Push

    /// A push to send, and what to record when the service accepts it.
    struct Push {
        var request: PushRequest
        /// The last local sequence it covers (nil for a part of the first upload).
        var last: Int64?
        /// Whether it carries the recorded fix-ups.
        var fixUps: Bool
        /// For a part of the first upload: where the upload stands once it is accepted.
        var upload: UploadProgress?
        /// The attachments it names, by hash, with their bytes: uploaded before it is sent.
        var attachments: [String: AttachmentUpload] = [:]
    }

    /// What is next to push (nil when there is nothing): while the store's first upload
    /// of its rows is not over, its next part of at most `rows` rows; then at most `limit`
    /// of the unpushed transactions, oldest first (fix-ups only with the push that empties
    /// the queue). Assigns global ids and clocks and saves them before anything is sent,
    /// so that a retried push sends the same transactions.
    func makePush(_ db: Database, limit: Int = .max, rows: Int = .max) throws -> Push? {
        guard var state = try loadState(db) else { return nil }
        var transactions: [SyncTransaction] = []
        var floor = state.pushed
        if try !hasPushedBefore(db) {
            // The first pushes of this store upload the rows it holds that did not come
            // from the service (the log may not reach back to every row), in parts, then
            // only what the log has after the upload began.
            let progress = try uploadProgress(db) ?? UploadProgress(floor: db.currentHistoryToken().sequence, table: 0, rowID: 0, part: 0)
            try save(progress, db)
            state.uploadFloor = progress.floor
            if let part = try uploadPush(from: progress, rows: rows, state: &state, db) { return part }
            // Every row is on the service: the log after the upload's start follows, and the
            // log before it for the rows the upload left out, those that came from the
            // service (`unpushed` keeps only their changes up to the floor): an edit of a
            // pulled row made before the first push is this device's to send. They come
            // after the first pulled transaction.
            try DeviceStateTable(db).setIfMissing(.uploaded, .integer(1))
            let firstPulled = try db.firstLoggedTransaction(after: state.pushedToken, by: Self.syncAuthor)
            floor = max(floor, min(progress.floor, (firstPulled ?? .max) - 1))
            state.pushed = floor
            try save(state, db)
        }
        var scan = state
        scan.pushed = floor
        let unpushed = try unpushed(scan, db)
        let stamps = try stamp(unpushed, state: &state, db)
        var resurrect = try resurrections(db)
        var covered = floor
        var complete = true
        for (transaction, changes) in unpushed {
            guard transactions.count < max(limit, 1) else {
                complete = false
                break
            }
            covered = transaction.token.sequence
            var out: [SyncChange] = []
            for (table, local) in resurrect {
                guard let row = try currentRow(table, local, db) else { continue }
                out.append(SyncChange(table: table.name, id: try globalIDCreating(table.name.lowercased(), local, db), op: .insert,
                                      values: try syncValues(row, table, db)))
            }
            resurrect = []
            let seq = transaction.token.sequence
            for (position, change) in changes.enumerated() {
                guard let table = tables[change.table.lowercased()] else { continue }
                let name = table.name.lowercased()
                switch change.operation {
                case .insert:
                    guard let new = change.new else { continue }
                    out.append(SyncChange(table: table.name, id: try globalID(name, change.rowID, at: seq, creating: true, db) ?? "", op: .insert,
                                          values: try syncValues(new, table, at: seq, db)))
                case .update:
                    if let old = change.oldRowID, old != change.rowID, let gid = try globalID(name, old, at: seq, creating: false, db) {
                        try IdentityMap(db).map(name, local: change.rowID, to: gid, pulled: false)
                    }
                    guard let new = change.new else { continue }
                    let values = try syncValues(new, table, at: seq, db)
                    guard !values.isEmpty else { continue }
                    out.append(SyncChange(table: table.name, id: try globalID(name, change.rowID, at: seq, creating: true, db) ?? "", op: .update, values: values))
                case .delete:
                    guard let gid = try globalID(name, change.rowID, at: seq, creating: false, db) else { continue }
                    out.append(SyncChange(table: table.name, id: gid, op: .delete))
                    // Not inserted again by the same transaction: the next row on this rowid is another row.
                    if Self.endsRow(changes, at: position) { try retire(name, change.rowID, gid: gid, at: seq, db) }
                }
            }
            if !out.isEmpty {
                transactions.append(SyncTransaction(device: state.device, local: transaction.token.sequence,
                                                    clock: stamps[transaction.token.sequence] ?? state.clock, changes: out))
            }
        }
        try save(state, db)
        var last = max(floor, covered)
        // Every pending transaction is in this push: what the upload covered is done with.
        if complete, let uploadFloor = state.uploadFloor { last = max(last, uploadFloor) }
        // Rows written elsewhere pointing at a parent this device deleted: fixed up with its
        // last transaction, or in one of their own numbered as the last logged transaction
        // (a pulled one: never pushed, so the number is free).
        let fixUps = complete ? try self.fixUps(db) : []
        if transactions.isEmpty, !fixUps.isEmpty, case let current = try db.currentHistoryToken().sequence, current > last {
            let clock = try stamp(current, at: Date(), state: &state, db)
            try save(state, db)
            transactions.append(SyncTransaction(device: state.device, local: current, clock: clock, changes: []))
            last = current
        }
        guard !transactions.isEmpty else {
            try pushed(through: last, head: nil, db)
            return nil
        }
        transactions[transactions.count - 1].changes += fixUps
        let attachments = try moveAttachmentsOutOfLine(&transactions, db)
        return Push(request: PushRequest(device: state.device, base: state.cursor, transactions: transactions), last: last,
                    fixUps: !fixUps.isEmpty, upload: nil, attachments: attachments)
    }

    /// The part of the first upload that starts at `progress` (nil when every row is
    /// uploaded): its rows' global ids and its clock are saved before it is sent, so that
    /// the part sent again is the same. ``SyncClient/sync()`` makes the next part while this
    /// one is on its way (`progress` is then where this one ends).
    func uploadPush(from progress: UploadProgress, rows: Int, state: inout State, _ db: Database) throws -> Push? {
        let (changes, next) = try uploadPart(from: progress, rows: rows, db)
        guard !changes.isEmpty else { return nil }
        let local = Self.uploadLocal(progress.part)
        let clock = try stamp(local, at: Date(), state: &state, db)
        try save(state, db)
        var parts = [SyncTransaction(device: state.device, local: local, clock: clock, changes: changes)]
        let attachments = try moveAttachmentsOutOfLine(&parts, db)
        return Push(request: PushRequest(device: state.device, base: state.cursor, transactions: parts), last: nil, fixUps: false,
                    upload: next, attachments: attachments)
    }

    /// The next part of the first upload after `part` (a part on its way: nil when it is the
    /// last, or when the upload is over), made while `part` travels.
    func uploadPush(after part: Push, rows: Int, _ db: Database) throws -> Push? {
        guard let progress = part.upload, try !hasPushedBefore(db), var state = try loadState(db) else { return nil }
        return try uploadPush(from: progress, rows: rows, state: &state, db)
    }

    /// The recorded fix-ups as changes: updates (NULLs, and references kept from a parent's
    /// deletion) first, then deletions.
    func fixUps(_ db: Database) throws -> [SyncChange] {
        var nulls: [String: (LocalTable, [String: SyncValue])] = [:]
        var deletions: [SyncChange] = []
        for entry in try FixUps(db).entries() {
            guard let table = tables[entry.table] else { continue }
            if entry.column.isEmpty {
                deletions.append(SyncChange(table: table.name, id: entry.gid, op: .delete))
            } else {
                nulls[entry.table + " " + entry.gid, default: (table, [:])].1[entry.column] = entry.reference.map(SyncValue.reference) ?? .null
            }
        }
        let updates = nulls.sorted { $0.key < $1.key }.map { key, value in
            SyncChange(table: value.0.name, id: String(key.split(separator: " ").last ?? ""), op: .update, values: value.1)
        }
        return updates + deletions
    }

    /// Whether this store, done with its first upload, has logged changes or fix-ups to push.
    func hasSomethingToPush(_ db: Database) throws -> Bool {
        guard let state = try loadState(db), try hasPushedBefore(db) else { return false }
        return try hasLocalTransactions(after: state.pushedToken, db) || hasFixUps(db)
    }

    func hasPushedBefore(_ db: Database) throws -> Bool {
        try DeviceStateTable(db).contains(.uploaded)
    }

    /// Where a store's first upload of its rows stands: the log sequence when it began
    /// (what the log has after it is pushed once the upload is over), the next row (by
    /// table, in ``order``, and rowid) and the number of the next part.
    struct UploadProgress: Sendable, Equatable {
        var floor: Int64
        var table: Int
        var rowID: Int64
        var part: Int64
    }

    /// The device's number for part `part` of the upload: below every log sequence (those
    /// start at 1), increasing, and the same when the part is sent again, so the service
    /// appends each part once.
    static func uploadLocal(_ part: Int64) -> Int64 { part - (1 << 40) }

    func uploadProgress(_ db: Database) throws -> UploadProgress? {
        let values = try DeviceStateTable(db).values()
        func integer(_ key: DeviceStateTable.Key) -> Int64? { if case .integer(let value)? = values[key] { value } else { nil } }
        guard let floor = integer(.uploadFloor) else { return nil }
        return UploadProgress(floor: floor, table: Int(integer(.uploadTable) ?? 0), rowID: integer(.uploadRowID) ?? 0, part: integer(.uploadPart) ?? 0)
    }

    func save(_ progress: UploadProgress, _ db: Database) throws {
        let table = DeviceStateTable(db)
        let pairs: [(DeviceStateTable.Key, Int64)] = [(.uploadFloor, progress.floor), (.uploadTable, Int64(progress.table)),
                                                      (.uploadRowID, progress.rowID), (.uploadPart, progress.part)]
        for (key, value) in pairs { try table.set(key, .integer(value)) }
    }

    /// The next part of the upload, at most `rows` rows from `progress` on, and where the
    /// upload stands after it; no changes when every row is uploaded.
    func uploadPart(from progress: UploadProgress, rows: Int, _ db: Database) throws -> ([SyncChange], UploadProgress) {
        var changes: [SyncChange] = []
        var next = progress
        let wanted = max(rows, 1)
        while next.table < order.count, changes.count < wanted {
            let name = order[next.table]
            guard let table = tables[name] else {
                next.table += 1
                next.rowID = 0
                continue
            }
            let asked = min(wanted - changes.count, 100_000)
            let sql = """
                SELECT rowid AS sluice_rowid, * FROM \(quoteIdentifier(table.name))
                WHERE rowid > ? AND rowid NOT IN (\(IdentityMap.pulledRowIDs)) ORDER BY rowid LIMIT ?
                """
            let found = try db.fetchRows(sql: sql, arguments: [.integer(next.rowID), .text(name), .integer(Int64(asked))])
            for row in found {
                guard case .integer(let local)? = row["sluice_rowid"] else { continue }
                let values = Row(columns: Array(row.columns.dropFirst()), values: Array(row.values.dropFirst()))
                changes.append(SyncChange(table: table.name, id: try globalIDCreating(name, local, db), op: .insert,
                                          values: try syncValues(values, table, db)))
                next.rowID = local
            }
            if found.count < asked {
                next.table += 1
                next.rowID = 0
            }
        }
        next.part += 1
        return (changes, next)
    }

    /// Records that the service took a part of the upload: the upload goes on from
    /// `progress`; `head` is the new cursor.
    func uploaded(_ progress: UploadProgress, head: Int64?, served: Int64, _ db: Database) throws {
        guard var state = try loadState(db) else { return }
        try save(progress, db)
        if let head { state.cursor = max(state.cursor, head) }
        try save(state, db)
        try acknowledgeStamps(Int64.min...Self.uploadLocal(progress.part - 1), head: served, cursor: state.cursor, db)
    }

    /// A part of this device's upload came back in a pull (the service took it, the
    /// answer was lost): the upload goes on after its last row, whatever the next part
    /// would now hold.
    func uploadPartPulled(_ transaction: SyncTransaction, _ db: Database) throws {
        guard transaction.local < 0, try !hasPushedBefore(db), var progress = try uploadProgress(db) else { return }
        let part = transaction.local + (1 << 40)
        guard part >= progress.part, let last = transaction.changes.last,
              let table = order.firstIndex(of: last.table.lowercased()),
              let local = try localID(last.table.lowercased(), last.id, db) else { return }
        progress.table = table
        progress.rowID = local
        progress.part = part + 1
        try save(progress, db)
    }

    /// Records a successful push: what it covered is no longer pending; `head` is the new
    /// cursor (nothing can come between the push's base and its own transactions), `served`
    /// the head the service answered with (its transactions are at or below it).
    func pushed(through last: Int64, head: Int64?, served: Int64? = nil, fixUps: Bool = false, _ db: Database) throws {
        guard var state = try loadState(db) else { return }
        if fixUps { try FixUps(db).removeAll() }
        state.pushed = max(state.pushed, last)
        if let head { state.cursor = max(state.cursor, head) }
        try save(state, db)
        if state.pushed >= 1 { try acknowledgeStamps(1...state.pushed, head: served ?? state.cursor, cursor: state.cursor, db) }
        try Resurrections(db).removeAll()
        try dropRetirements(through: state.pushed, db)
        try db.acknowledgeHistory(HistoryToken(databaseID: state.databaseID, sequence: state.pushed), for: Self.consumer)
    }

    func resurrections(_ db: Database) throws -> [(LocalTable, Int64)] {
        try Resurrections(db).all().compactMap { entry in tables[entry.table].map { ($0, entry.local) } }
    }

    /// Local values → wire values: the key column left out, foreign keys as global ids (of
    /// the rows they pointed at when log sequence `seq` was written; nil: now).
    func syncValues(_ row: Row, _ table: LocalTable, at seq: Int64? = nil, _ db: Database) throws -> [String: SyncValue] {
        var values: [String: SyncValue] = [:]
        for (index, column) in row.columns.enumerated() {
            let name = column.lowercased()
            if let key = table.keyColumn, key.lowercased() == name { continue }
            let value = row.values[index]
            if let parent = table.references[name], case .integer(let local) = value {
                let gid = try seq.map { try globalID(parent, local, at: $0, creating: true, db) } ?? globalIDCreating(parent, local, db)
                values[column] = .reference(gid ?? "")
            } else {
                values[column] = SyncValue(value)
            }
        }
        return values
    }
}
