import Foundation
import SluiceSyncPolicy
import SluiceSyncProtocol

/// Partial sync: the rows of a device's subscriptions, as changes to apply (``RowsResponse``),
/// read from any ``SubsetSource`` (the service's PostgreSQL, or a history in memory).
///
/// A round (pages after `since`, each read in one consistent state of the rows) holds:
/// - for each subscription, the rows of its table changed after `since` (and, for a filter
///   with a path such as `recipient.city`, the rows whose parent along the path changed):
///   deleted ones as `delete`, kept ones as `insert` with their values, the others as `leave`
///   (or as `insert` when a row the device keeps points at them: it keeps them while so);
/// - after `since` > 0, the changed rows of the tables the subscriptions' rows point at:
///   as `insert` those a kept row points at, as `leave` (the id only) the others;
/// - the rows every row sent as `insert` points at, and the rows those point at (so that
///   the device's foreign keys resolve); in a round from nothing (`since` 0), not those of
///   a table subscribed whole earlier in the round that were written before its first page
///   (``RowsRequest/roundHead``): that part of the round sent them already.
///
/// The device then removes its rows that no subscription keeps and no row points at.
public enum SubsetPages {
    /// Rows per page (their parents come on top).
    public static let pageSize = 10_000

    /// `request`'s subscriptions checked against `schema`.
    ///
    /// - Throws: `SyncErrorBody` (`invalid`) naming what is wrong: no subscription, a
    ///   negative `since`, a position naming no part of the round, an unknown table or a
    ///   filter the service cannot run, two subscriptions to one table.
    public static func checked(_ request: RowsRequest, schema: SyncSchema) throws -> [SubsetEvaluator.Checked] {
        guard !request.subscriptions.isEmpty else {
            throw SyncErrorBody(.invalid, message: "a rows request names at least one subscription")
        }
        guard request.since >= 0 else { throw SyncErrorBody(.invalid, message: "since is 0 or more") }
        // A page's position names a part of the round: a subscription, then a table its rows point at.
        if let after = request.after, after.subscription < 0 || after.subscription >= request.subscriptions.count + schema.tables.count {
            throw SyncErrorBody(.invalid, message: "after.subscription \(after.subscription) names no part of this round")
        }
        let checked = try request.subscriptions.map { try SubsetEvaluator.check($0, schema: schema) }
        var seen: Set<String> = []
        for subscription in checked where !seen.insert(subscription.table.name.lowercased()).inserted {
            throw SyncErrorBody(.invalid, message: "two subscriptions to \(subscription.table.name): join their filters with OR")
        }
        return checked
    }

    /// The tables a device with `subscriptions` holds: theirs, and the tables their rows
    /// point at, and so on; the ones no subscription names come after, by name.
    static func subsetTables(_ subscriptions: [SubsetEvaluator.Checked], schema: SyncSchema) -> (referenceOnly: [SyncSchema.Table], targets: Set<String>) {
        var all: [String: SyncSchema.Table] = [:]
        var queue = subscriptions.map(\.table)
        while let table = queue.popLast() {
            guard all[table.name.lowercased()] == nil else { continue }
            all[table.name.lowercased()] = table
            queue += table.columns.compactMap(\.references).compactMap { schema.table(named: $0) }
        }
        let subscribed = Set(subscriptions.map { $0.table.name.lowercased() })
        let targets = Set(all.values.flatMap { $0.columns.compactMap { $0.references?.lowercased() } })
        let referenceOnly = all.filter { !subscribed.contains($0.key) }.sorted { $0.key < $1.key }.map(\.value)
        return (referenceOnly, targets)
    }

    /// One page of a round of ``RowsRequest``, at most `limit` rows (and their parents).
    public static func page(_ request: RowsRequest, subscriptions: [SubsetEvaluator.Checked], schema: SyncSchema, limit: Int,
                            rows source: some SubsetSource) async throws -> RowsResponse {
        let page = try await entries(request, subscriptions: subscriptions, schema: schema, limit: limit, rows: source, passingStored: false)
        return RowsResponse(head: page.head, changes: try page.entries.map { try $0.change() }, next: page.next)
    }

    /// A page's changes in order: each decoded, or a row passed on as its source stores it.
    struct Page {
        var head: Int64
        var entries: [Entry]
        var next: RowsPosition?
    }

    enum Entry {
        case change(SyncChange)
        /// A row sent as `insert` with its stored values and clocks.
        case stored(table: String, id: String, StoredRow.Stored)
    }

    /// A page as ``page(_:subscriptions:schema:limit:rows:)`` reads it; with `passingStored`,
    /// the rows whose values the page does not read (no filter, no reference to follow) may
    /// stay as `source` stores them.
    static func entries(_ request: RowsRequest, subscriptions: [SubsetEvaluator.Checked], schema: SyncSchema, limit: Int,
                        rows source: some SubsetSource, passingStored: Bool) async throws -> Page {
        let (referenceOnly, targets) = subsetTables(subscriptions, schema: schema)
        let phases = subscriptions.count + (request.since > 0 ? referenceOnly.count : 0)
        let head = try await source.head()
        var changes: [Entry] = []
        var sent: Set<String> = []
        // Each row sent as `insert` whose parents follow, with the part of the round it is in.
        var inserted: [(row: StoredRow, phase: Int)] = []
        // The part of the round that sends each table subscribed whole: a row of a part after
        // it points at rows sent there, unless they were written since the round began.
        var whole: [String: Int] = [:]
        for (index, subscription) in subscriptions.enumerated() where subscription.filter == nil {
            whole[subscription.table.name.lowercased()] = index
        }
        let sentBefore = request.since == 0 ? request.roundHead : nil
        var next: RowsPosition?
        var phase = max(request.after?.subscription ?? 0, 0)
        var after = request.after?.id ?? ""
        while phase < phases, next == nil {
            let room = limit - changes.count
            let subscription = phase < subscriptions.count ? subscriptions[phase] : nil
            let table = subscription?.table ?? referenceOnly[phase - subscriptions.count]
            let paths = (subscription?.pathColumns ?? []).map { (column: $0.name, parent: $0.references?.lowercased() ?? "") }
            // A filter reads the values, and so does following the references of the rows sent.
            let decoding = !passingStored || subscription?.filter != nil || table.columns.contains { $0.references != nil }
            let candidates = try await source.changedRows(table.name.lowercased(), since: request.since, after: after, limit: room, paths: paths,
                                                          decoding: decoding)
            let live = candidates.filter { !$0.deleted }
            var kept: Set<String> = []
            if let subscription {
                kept = try await self.kept(live, by: subscription, schema: schema, source: source)
            }
            // A row not kept by a subscription goes with its values only while a row the
            // device keeps points at it (a changed row of a table pointed at: only then).
            if subscription == nil || targets.contains(table.name.lowercased()) {
                let others = Set(live.map(\.id)).subtracting(kept)
                kept.formUnion(try await pointedAtByKept(table: table.name, ids: others, subscriptions: subscriptions,
                                                         held: subscriptions.map(\.table) + referenceOnly, schema: schema, source: source))
            }
            for row in candidates {
                let key = table.name.lowercased() + "\u{0}" + row.id
                if row.deleted {
                    changes.append(.change(SyncChange(table: table.name, id: row.id, op: .delete)))
                } else if kept.contains(row.id) {
                    guard sent.insert(key).inserted else { continue }
                    if let stored = row.stored {
                        changes.append(.stored(table: table.name, id: row.id, stored))
                    } else {
                        changes.append(.change(SyncChange(table: table.name, id: row.id, op: .insert, values: row.values, clocks: row.clocks)))
                        inserted.append((row, phase))
                    }
                } else {
                    changes.append(.change(SyncChange(table: table.name, id: row.id, op: .leave)))
                }
            }
            if candidates.count >= room, let last = candidates.last {
                next = RowsPosition(subscription: phase, id: last.id)
            } else {
                phase += 1
                after = ""
            }
        }
        // The rows the inserted rows point at, and the rows those point at.
        var pending = inserted
        while !pending.isEmpty {
            // By parent table and id, the earliest part of the round a row pointing at it is in.
            var wanted: [String: [String: Int]] = [:]
            for (row, phase) in pending {
                guard let table = schema.table(named: row.table) else { continue }
                for column in table.columns {
                    guard let parent = column.references?.lowercased(), case .reference(let gid)? = row.values[column.name],
                          !sent.contains(parent + "\u{0}" + gid) else { continue }
                    wanted[parent, default: [:]][gid] = min(wanted[parent]?[gid] ?? phase, phase)
                }
            }
            pending = []
            for (parent, ids) in wanted.sorted(by: { $0.key < $1.key }) {
                guard let table = schema.table(named: parent) else { continue }
                for stored in try await source.storedRows(parent, ids: ids.keys.sorted()) where !stored.deleted {
                    let phase = ids[stored.id] ?? 0
                    if let sentBefore, let part = whole[parent], part < phase, let seq = stored.seq, seq <= sentBefore { continue }
                    guard sent.insert(parent + "\u{0}" + stored.id).inserted else { continue }
                    changes.append(.change(SyncChange(table: table.name, id: stored.id, op: .insert, values: stored.values, clocks: stored.clocks)))
                    pending.append((stored, phase))
                }
            }
        }
        return Page(head: head, entries: changes, next: next)
    }

    /// The live rows of a subscription's table that it keeps, among `live`: every one
    /// without a filter; with one, evaluated with the rows its path columns point at.
    static func kept(_ live: [StoredRow], by subscription: SubsetEvaluator.Checked, schema: SyncSchema, source: some SubsetSource) async throws -> Set<String> {
        guard subscription.filter != nil else { return Set(live.map(\.id)) }
        var references: [String: Set<String>] = [:]
        for row in live {
            for column in subscription.pathColumns {
                if case .reference(let gid)? = row.values[column.name], let parent = column.references { references[parent.lowercased(), default: []].insert(gid) }
            }
        }
        var parents: [StoredRow] = []
        for (parent, ids) in references.sorted(by: { $0.key < $1.key }) {
            parents += try await source.storedRows(parent, ids: ids.sorted()).filter { !$0.deleted }
        }
        return try SubsetEvaluator.kept(live, by: subscription, parents: parents, schema: schema)
    }

    /// Of `ids` (rows of `table`), those a row the device keeps points at: a live row its
    /// subscription keeps, or a live row of a table the device holds for being pointed at
    /// that such a row points at in turn (followed `depth` steps at most).
    static func pointedAtByKept(table: String, ids: Set<String>, subscriptions: [SubsetEvaluator.Checked], held: [SyncSchema.Table], schema: SyncSchema,
                                source: some SubsetSource, depth: Int = 8) async throws -> Set<String> {
        guard !ids.isEmpty, depth > 0 else { return [] }
        var found: Set<String> = []
        for child in held {
            for column in child.columns where column.references?.lowercased() == table.lowercased() {
                let live = try await source.liveRows(child.name.lowercased(), whose: column.name, referencesOneOf: ids.sorted())
                guard !live.isEmpty else { continue }
                var pointing: Set<String> = []
                if let subscription = subscriptions.first(where: { $0.table.name.lowercased() == child.name.lowercased() }) {
                    pointing = try await kept(live, by: subscription, schema: schema, source: source)
                }
                let rest = Set(live.map(\.id)).subtracting(pointing)
                pointing.formUnion(try await pointedAtByKept(table: child.name, ids: rest, subscriptions: subscriptions, held: held, schema: schema,
                                                            source: source, depth: depth - 1))
                for row in live where pointing.contains(row.id) {
                    if case .reference(let gid)? = row.values[column.name] { found.insert(gid) }
                }
            }
        }
        return found
    }
}
