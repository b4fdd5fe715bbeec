import Foundation
import SluiceSyncProtocol
import Store

extension SyncEngine {
    // MARK: - Push

    /// The push for what is unpushed, at most `limit` transactions of it, oldest first (nil
    /// when there is nothing), with the last local sequence it covers, and whether it
    /// carries fix-ups (only the push that empties the queue does). Assigns global ids and
    /// clocks and saves them before anything is sent, so that a retried push sends the same
    /// transactions.
    func makePush(_ db: Database, limit: Int = .max) throws -> (PushRequest, Int64, Bool)? {
        guard var state = try loadState(db) else { return nil }
        var transactions: [SyncTransaction] = []
        var floor = state.pushed
        if try !hasPushedBefore(db) {
            // First push of this store: upload the rows it holds that did not come from the
            // service (the log may not reach back to every row), then push only what the
            // log has after that. Sent again until a push succeeds.
            let token = try db.currentHistoryToken()
            let upload = try initialUpload(db)
            if !upload.isEmpty {
                state.clock = state.clock.tick(at: Date())
                transactions.append(SyncTransaction(device: state.device, local: token.sequence, clock: state.clock, changes: upload))
            }
            floor = max(floor, token.sequence)
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
            for change in changes {
                guard let table = tables[change.table.lowercased()] else { continue }
                let name = table.name.lowercased()
                switch change.operation {
                case .insert:
                    guard let new = change.new else { continue }
                    out.append(SyncChange(table: table.name, id: try globalIDCreating(name, change.rowID, db), op: .insert,
                                          values: try syncValues(new, table, db)))
                case .update:
                    if let old = change.oldRowID, old != change.rowID, let gid = try globalID(name, old, db) {
                        try map(name, local: change.rowID, to: gid, pulled: false, db)
                    }
                    guard let new = change.new else { continue }
                    let values = try syncValues(new, table, db)
                    guard !values.isEmpty else { continue }
                    out.append(SyncChange(table: table.name, id: try globalIDCreating(name, change.rowID, db), op: .update, values: values))
                case .delete:
                    guard let gid = try globalID(name, change.rowID, db) else { continue }
                    out.append(SyncChange(table: table.name, id: gid, op: .delete))
                }
            }
            if !out.isEmpty {
                transactions.append(SyncTransaction(device: state.device, local: transaction.token.sequence,
                                                    clock: stamps[transaction.token.sequence] ?? state.clock, changes: out))
            }
        }
        try save(state, db)
        var last = max(floor, covered)
        // Rows written elsewhere pointing at a parent this device deleted: fixed up with its
        // last transaction, or in one of their own numbered as the last logged transaction
        // (a pulled one: never pushed, so the number is free).
        let fixUps = complete ? try self.fixUps(db) : []
        if transactions.isEmpty, !fixUps.isEmpty, case let current = try db.currentHistoryToken().sequence, current > last {
            state.clock = state.clock.tick(at: Date())
            try save(state, db)
            transactions.append(SyncTransaction(device: state.device, local: current, clock: state.clock, changes: []))
            last = current
        }
        guard !transactions.isEmpty else {
            try pushed(through: last, head: nil, db)
            return nil
        }
        transactions[transactions.count - 1].changes += fixUps
        return (PushRequest(device: state.device, base: state.cursor, transactions: transactions), last, !fixUps.isEmpty)
    }

    /// The recorded fix-ups as changes: NULLs first, then deletions.
    func fixUps(_ db: Database) throws -> [SyncChange] {
        var nulls: [String: (LocalTable, [String: SyncValue])] = [:]
        var deletions: [SyncChange] = []
        for row in try db.fetchRows(sql: "SELECT tbl, gid, col FROM sluice_sync_fixup ORDER BY tbl, gid, col") {
            guard case .text(let name)? = row["tbl"], case .text(let gid)? = row["gid"], case .text(let column)? = row["col"],
                  let table = tables[name] else { continue }
            if column.isEmpty {
                deletions.append(SyncChange(table: table.name, id: gid, op: .delete))
            } else {
                nulls[name + " " + gid, default: (table, [:])].1[column] = .null
            }
        }
        let updates = nulls.sorted { $0.key < $1.key }.map { key, value in
            SyncChange(table: value.0.name, id: String(key.split(separator: " ").last ?? ""), op: .update, values: value.1)
        }
        return updates + deletions
    }

    func hasPushedBefore(_ db: Database) throws -> Bool {
        try !db.fetchRows(sql: "SELECT 1 FROM sluice_sync_state WHERE key = 'uploaded'").isEmpty
    }

    func initialUpload(_ db: Database) throws -> [SyncChange] {
        var changes: [SyncChange] = []
        for name in order {
            guard let table = tables[name] else { continue }
            let sql = "SELECT rowid AS sluice_rowid, * FROM \(quoteIdentifier(table.name)) WHERE rowid NOT IN (SELECT local FROM sluice_sync_id WHERE tbl = ? AND pulled) ORDER BY rowid"
            for row in try db.fetchRows(sql: sql, arguments: [.text(name)]) {
                guard case .integer(let local)? = row["sluice_rowid"] else { continue }
                let values = Row(columns: Array(row.columns.dropFirst()), values: Array(row.values.dropFirst()))
                changes.append(SyncChange(table: table.name, id: try globalIDCreating(name, local, db), op: .insert,
                                          values: try syncValues(values, table, db)))
            }
        }
        return changes
    }

    /// Records a successful push: what it covered is no longer pending; `head` is the new
    /// cursor (nothing can come between the push's base and its own transactions).
    func pushed(through last: Int64, head: Int64?, fixUps: Bool = false, _ db: Database) throws {
        guard var state = try loadState(db) else { return }
        if fixUps { try db.execute(sql: "DELETE FROM sluice_sync_fixup") }
        state.pushed = max(state.pushed, last)
        if let head { state.cursor = max(state.cursor, head) }
        try save(state, db)
        try db.execute(sql: "DELETE FROM sluice_sync_stamp WHERE seq <= ?", arguments: [.integer(state.pushed)])
        try db.execute(sql: "DELETE FROM sluice_sync_resurrect")
        try db.execute(sql: "INSERT INTO sluice_sync_state (key, value) VALUES ('uploaded', 1) ON CONFLICT (key) DO NOTHING")
        try db.execute(sql: "UPDATE sluice_consumer SET acknowledged = max(acknowledged, ?), at = ? WHERE name = ?",
                       arguments: [.integer(state.pushed), .integer(Int64(Date().timeIntervalSince1970 * 1000)), .text(Self.consumer)])
    }

    func resurrections(_ db: Database) throws -> [(LocalTable, Int64)] {
        try db.fetchRows(sql: "SELECT tbl, local FROM sluice_sync_resurrect").compactMap { row in
            guard case .text(let name)? = row["tbl"], case .integer(let local)? = row["local"], let table = tables[name] else { return nil }
            return (table, local)
        }
    }

    /// Local values → wire values: the key column left out, foreign keys as global ids.
    func syncValues(_ row: Row, _ table: LocalTable, _ db: Database) throws -> [String: SyncValue] {
        var values: [String: SyncValue] = [:]
        for (index, column) in row.columns.enumerated() {
            let name = column.lowercased()
            if let key = table.keyColumn, key.lowercased() == name { continue }
            let value = row.values[index]
            if let parent = table.references[name], case .integer(let local) = value {
                values[column] = .reference(try globalIDCreating(parent, local, db))
            } else {
                values[column] = Self.syncValue(value)
            }
        }
        return values
    }

    static func syncValue(_ value: SQLiteValue) -> SyncValue {
        switch value {
        case .null: .null
        case .integer(let value): .integer(value)
        case .real(let value): .real(value)
        case .text(let value): .text(value)
        case .blob(let value): .blob(value)
        }
    }
}
