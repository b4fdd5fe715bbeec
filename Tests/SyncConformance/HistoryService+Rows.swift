import Foundation
import SluiceSyncClient
import SluiceSyncPolicy
import SluiceSyncProtocol
import SluiceSyncStore

/// The history service's current rows: what its pushes fold into (the service's row rules
/// read and write them), and what partial sync and snapshots page.
extension HistoryService {
    /// The current rows as the service's rules read and fold them (inside the push gate).
    struct Rows: CurrentRows {
        let service: HistoryService

        private func live(_ table: String, _ id: String) -> [String: SyncValue]? {
            guard let row = service.rows[table + "\u{0}" + id], !row.deleted else { return nil }
            return row.values
        }

        static func reference(_ values: [String: SyncValue], _ column: String) -> String? {
            let value = values.first { $0.key.lowercased() == column.lowercased() }?.value
            if case .reference(let id)? = value { return id }
            return nil
        }

        func liveValues(_ table: String, ids: [String]) -> [String: [String: SyncValue]] {
            service.lock.withLock {
                Dictionary(ids.compactMap { id in live(table, id).map { (id, $0) } }, uniquingKeysWith: { first, _ in first })
            }
        }

        func liveRows(_ table: String, whose column: String, referencesOneOf parents: [String]) -> [String] {
            let parents = Set(parents)
            return service.lock.withLock {
                service.rows.compactMap { key, row in
                    let parts = key.split(separator: "\u{0}", maxSplits: 1).map(String.init)
                    guard parts.count == 2, parts[0] == table, !row.deleted, let parent = Self.reference(row.values, column), parents.contains(parent) else { return nil }
                    return parts[1]
                }
            }
        }

        func notLive(_ table: String, among ids: [String]) -> [String] {
            service.lock.withLock { ids.filter { live(table, $0) == nil } }
        }

        func liveRows(_ table: String, among ids: [String], whose column: String, referencesNoLiveRowOf parent: String) -> [String] {
            service.lock.withLock {
                ids.filter { id in
                    guard let values = live(table, id), let reference = Self.reference(values, column) else { return false }
                    return live(parent, reference) == nil
                }
            }
        }

        func fold(_ changes: [RowFold.Change], seq: Int64, clock: Int64) {
            service.lock.withLock {
                for change in changes {
                    let key = change.table + "\u{0}" + change.id
                    let clocks = Dictionary(change.values.keys.map { ($0, clock) }, uniquingKeysWith: { first, _ in first })
                    switch change.op {
                    case .insert: service.rows[key] = CurrentRow(values: change.values, seq: seq, clocks: clocks)
                    case .update:
                        guard var row = service.rows[key], !row.deleted else { continue }
                        row.values.merge(change.values) { $1 }
                        row.clocks.merge(clocks) { $1 }
                        row.seq = seq
                        service.rows[key] = row
                    case .delete:
                        service.rows[key]?.deleted = true
                        service.rows[key]?.seq = seq
                    case .leave: continue
                    }
                }
            }
        }
    }

    /// The current rows as a page of partial sync reads them (one page under the lock, so
    /// in one state).
    struct Subset: SubsetSource {
        let service: HistoryService

        func head() -> Int64 { service.lock.withLock { service.headSeq } }

        private func stored(_ table: String, _ id: String, _ row: CurrentRow) -> StoredRow {
            var stored = StoredRow(table: table, id: id, values: row.values, deleted: row.deleted, clocks: row.clocks)
            stored.seq = row.seq
            return stored
        }

        private func rows(of table: String) -> [(id: String, row: CurrentRow)] {
            service.rows.compactMap { key, row in
                let parts = key.split(separator: "\u{0}", maxSplits: 1).map(String.init)
                return parts.count == 2 && parts[0] == table ? (parts[1], row) : nil
            }.sorted { $0.id < $1.id }
        }

        func changedRows(_ table: String, since: Int64, after: String, limit: Int, paths: [(column: String, parent: String)]) -> [StoredRow] {
            service.lock.withLock { changed(table, since: since, after: after, limit: limit, paths: paths) }
        }

        /// Unless `decoding`, each row as PostgreSQL's `jsonb` prints it (`{"k": v, ...}`),
        /// as the service passes it on.
        func changedRows(_ table: String, since: Int64, after: String, limit: Int, paths: [(column: String, parent: String)],
                         decoding: Bool) throws -> [StoredRow] {
            let rows = changedRows(table, since: since, after: after, limit: limit, paths: paths)
            guard !decoding else { return rows }
            return try rows.map { row in
                let values = try SyncJSON.encode(row.values, at: "table \(table), row \(row.id)")
                let clocks = try JSONEncoder().encode(row.clocks)
                return StoredRow(table: row.table, id: row.id, stored: StoredRow.Stored(values: Self.spaced(values), clocks: Self.spaced(clocks)),
                                 deleted: row.deleted)
            }
        }

        /// Compact JSON spaced as `jsonb` prints it: a space after each `:` and `,` outside strings.
        static func spaced(_ json: Data) -> String {
            var out: [UInt8] = []
            var inString = false, escaped = false
            for byte in json {
                out.append(byte)
                if inString {
                    if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                } else if byte == UInt8(ascii: "\"") {
                    inString = true
                } else if byte == UInt8(ascii: ":") || byte == UInt8(ascii: ",") {
                    out.append(UInt8(ascii: " "))
                }
            }
            return String(decoding: out, as: UTF8.self)
        }

        private func changed(_ table: String, since: Int64, after: String, limit: Int, paths: [(column: String, parent: String)]) -> [StoredRow] {
            let changed = rows(of: table).filter { id, row in
                guard id > after else { return false }
                if since == 0 { return !row.deleted }
                if row.seq > since { return true }
                return !row.deleted && paths.contains { path in
                    guard let parent = Rows.reference(row.values, path.column), let stored = service.rows[path.parent + "\u{0}" + parent] else { return false }
                    return stored.seq > since
                }
            }
            return changed.prefix(max(limit, 1)).map { stored(table, $0.id, $0.row) }
        }

        func storedRows(_ table: String, ids: [String]) -> [StoredRow] {
            service.lock.withLock { ids.sorted().compactMap { id in service.rows[table + "\u{0}" + id].map { stored(table, id, $0) } } }
        }

        func liveRows(_ table: String, whose column: String, referencesOneOf ids: [String]) -> [StoredRow] {
            let ids = Set(ids)
            return service.lock.withLock {
                rows(of: table).filter { !$0.row.deleted && Rows.reference($0.row.values, column).map(ids.contains) == true }
                    .map { stored(table, $0.id, $0.row) }
            }
        }
    }

    func rows(_ request: RowsRequest, version: Int?) async throws -> RowsResponse {
        let subscriptions: [SubsetEvaluator.Checked]
        do { subscriptions = try SubsetPages.checked(request, schema: schema) } catch let error as SyncErrorBody {
            throw Self.rejection(error)
        }
        if let device = request.device { lock.withLock { saw(device, at: request.since) } }
        let limit = min(max(request.limit ?? SubsetPages.pageSize, 1), SubsetPages.pageSize)
        // One page in one state of the rows: no push appends meanwhile.
        await gate.enter()
        do {
            // As the service: rows passed on as stored, then read as the device reads them;
            // an older app version's page is read, renamed and written again.
            guard versioned.isOlder(version) else {
                let data = try await SubsetPages.encodedPage(request, subscriptions: subscriptions, schema: schema, limit: limit, rows: Subset(service: self))
                await gate.leave()
                return try SyncJSON.decode(RowsResponse.self, from: data)
            }
            var page = try await SubsetPages.page(request, subscriptions: subscriptions, schema: schema, limit: limit, rows: Subset(service: self))
            await gate.leave()
            if let changes = versioned.downgraded(page.changes, for: version) { page.changes = changes }
            return page
        } catch {
            await gate.leave()
            throw error
        }
    }
}
