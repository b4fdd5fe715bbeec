import Foundation
import SluiceSyncProtocol
import Sluice

/// Attachments on the device: blob columns named in ``SyncConfiguration/attachments``
/// travel as their hash (``SyncAttachment``) and their bytes go in chunks. What waits,
/// what was fetched and which rows hold which bytes is kept by ``AttachmentLedger``; a
/// holder is checked against the row's bytes on use.
extension SyncEngine {
    /// The attachment columns of each synced table (lowercased), from the configuration;
    /// refuses a name that is not a nullable blob column of a synced table.
    func attachmentColumns(_ infos: [TableInfo]) throws -> [String: Set<String>] {
        var result: [String: Set<String>] = [:]
        for name in configuration.attachments {
            let parts = name.split(separator: ".", maxSplits: 1).map(String.init)
            guard parts.count == 2, let info = infos.first(where: { $0.name.lowercased() == parts[0].lowercased() }) else {
                throw StoreError(code: .unknownTable, message: "sync: attachment '\(name)' is not \"table.column\" of a synced table")
            }
            guard let column = info.column(named: parts[1]) else {
                throw StoreError(code: .unknownColumn, message: "sync: attachment '\(name)': \(info.name) has no column '\(parts[1])'")
            }
            guard column.declaredType.isEmpty || column.affinity == .blob else {
                throw StoreError(code: .typeMismatch, message: "sync: attachment '\(name)' is a \(column.declaredType) column; an attachment is a BLOB column")
            }
            guard !column.isNotNull else {
                throw StoreError(code: .typeMismatch, message: "sync: attachment '\(name)' is NOT NULL; an attachment column holds NULL until its bytes are here")
            }
            result[info.name.lowercased(), default: []].insert(column.name.lowercased())
        }
        return result
    }

    // MARK: - Pulled

    /// The local value of a pulled attachment: the bytes when they are here (the row holds
    /// them already, or their chunks are fetched), else NULL, with the attachment recorded
    /// as one to fetch.
    func localAttachment(_ attachment: SyncAttachment, _ table: LocalTable, column: String, gid: String, _ db: Database) throws -> SQLiteValue {
        guard table.attachments.contains(column.lowercased()) else {
            throw StoreError(code: .typeMismatch,
                             message: "sync: pulled an attachment for \(table.name).\(column), which this device does not sync as one (SyncConfiguration.attachments)")
        }
        let name = table.name.lowercased()
        if let held = try bytes(of: attachment, in: table, gid: gid, column: column, db) {
            try forgetAttachment(name, gid: gid, column: column, db)
            return .blob(held)
        }
        if let content = try fetchedContent(of: attachment, db) ?? heldContent(of: attachment, db) {
            try forgetAttachment(name, gid: gid, column: column, db)
            try held(attachment, name, gid: gid, column: column, db)
            return .blob(content)
        }
        try AttachmentLedger(db).wait(.init(table: name, gid: gid, column: column), for: attachment)
        return .null
    }

    /// A value other than an attachment pulled for `column`: an attachment still to fetch
    /// there is not wanted any more.
    func pulledPlainValue(_ table: LocalTable, column: String, gid: String, _ db: Database) throws {
        guard table.attachments.contains(column.lowercased()) else { return }
        try forgetAttachment(table.name.lowercased(), gid: gid, column: column, db)
    }

    /// The device's value of `column` stands against a pulled one: the pulled attachment is
    /// not fetched.
    func keptLocal(_ key: RowKey, column: String, _ db: Database) throws {
        guard tables[key.table]?.attachments.contains(column.lowercased()) == true, let gid = try globalID(key.table, key.rowID, db) else { return }
        try forgetAttachment(key.table, gid: gid, column: column, db)
    }

    func forgetAttachment(_ table: String, gid: String, column: String, _ db: Database) throws {
        try AttachmentLedger(db).stopWaiting(.init(table: table, gid: gid, column: column))
    }

    /// The content of `attachment` from its fetched chunks, when every one is here and they
    /// match its hash.
    func fetchedContent(of attachment: SyncAttachment, _ db: Database) throws -> Data? {
        let chunks = try AttachmentLedger(db).chunks(of: attachment.hash)
        guard chunks.count == attachment.chunkCount else { return nil }
        var content = Data()
        content.reserveCapacity(Int(attachment.size))
        for (position, chunk) in chunks.enumerated() {
            guard chunk.index == Int64(position) else { return nil }
            content.append(chunk.data)
        }
        guard content.count == attachment.size, SyncAttachment.hash(of: content) == attachment.hash else { return nil }
        return content
    }

    /// Records that a row's column holds `attachment`'s bytes.
    func held(_ attachment: SyncAttachment, _ table: String, gid: String, column: String, _ db: Database) throws {
        try AttachmentLedger(db).hold(attachment, at: .init(table: table, gid: gid, column: column))
    }

    /// The bytes row `gid` holds in `column`, when they are `attachment`'s.
    private func bytes(of attachment: SyncAttachment, in table: LocalTable, gid: String, column: String, _ db: Database) throws -> Data? {
        guard let local = try localID(table.name.lowercased(), gid, db),
              case .blob(let data)? = try db.fetchRows(sql: "SELECT \(quoteIdentifier(column)) FROM \(quoteIdentifier(table.name)) WHERE rowid = ?",
                                                        arguments: [.integer(local)]).first?[0],
              data.count == attachment.size, SyncAttachment.hash(of: data) == attachment.hash else { return nil }
        return data
    }

    /// `attachment`'s bytes from a row here that holds them (records found stale are dropped).
    func heldContent(of attachment: SyncAttachment, _ db: Database) throws -> Data? {
        let ledger = AttachmentLedger(db)
        for holder in try ledger.holders(of: attachment.hash) {
            if let table = tables[holder.table], let column = table.info.column(named: holder.column)?.name,
               let data = try bytes(of: attachment, in: table, gid: holder.gid, column: column, db) {
                return data
            }
            try ledger.forgetHolder(holder)
        }
        return nil
    }

    // MARK: - Pushed

    /// Moves the attachment columns' blobs of `transactions` out of line: each becomes its
    /// hash, and its bytes are returned to be uploaded before the push. A NULL in a row sent
    /// whole stands for an attachment pulled and not fetched yet (its hash is sent); a value
    /// this device wrote drops the fetch of the one it replaces.
    func moveAttachmentsOutOfLine(_ transactions: inout [SyncTransaction], _ db: Database) throws -> [String: AttachmentUpload] {
        guard syncsAttachments else { return [:] }
        var uploads: [String: AttachmentUpload] = [:]
        for transaction in transactions.indices {
            for index in transactions[transaction].changes.indices {
                let change = transactions[transaction].changes[index]
                guard let table = tables[change.table.lowercased()], !table.attachments.isEmpty, var values = change.values else { continue }
                let name = table.name.lowercased()
                for (column, value) in values where table.attachments.contains(column.lowercased()) {
                    switch value {
                    case .blob(let content):
                        let attachment = SyncAttachment(content: content)
                        uploads[attachment.hash] = AttachmentUpload(attachment: attachment, content: content)
                        values[column] = .attachment(attachment)
                        try forgetAttachment(name, gid: change.id, column: column, db)
                        try held(attachment, name, gid: change.id, column: column, db)
                    case .null where change.op == .insert:
                        if let pending = try pendingAttachment(name, gid: change.id, column: column, db) { values[column] = .attachment(pending) }
                    default:
                        try forgetAttachment(name, gid: change.id, column: column, db)
                    }
                }
                transactions[transaction].changes[index].values = values
            }
        }
        return uploads
    }

    func pendingAttachment(_ table: String, gid: String, column: String, _ db: Database) throws -> SyncAttachment? {
        try AttachmentLedger(db).awaited(at: .init(table: table, gid: gid, column: column))
    }

    // MARK: - Fetching

    /// Whether a synced table has attachment columns.
    var syncsAttachments: Bool { tables.values.contains { !$0.attachments.isEmpty } }

    func hasAttachmentsToFetch(_ db: Database) throws -> Bool {
        try AttachmentLedger(db).isWaiting()
    }

    /// The attachments to fetch, each with the rows waiting for it and the chunks here
    /// already. Records whose row is gone are dropped. With `eagerOnly`, only those the
    /// configuration and `subscriptions` fetch eagerly; with `rows`, only those of these rows.
    func attachmentsToFetch(eagerOnly: Bool, subscriptions: [SyncSubscription]?, rows: (table: String, rowIDs: Set<Int64>?)?,
                            _ db: Database) throws -> [(SyncAttachment, [PendingAttachment])] {
        var eager: [String: EagerRows] = [:]
        var found: [String: (SyncAttachment, [PendingAttachment])] = [:]
        for (place, attachment) in try AttachmentLedger(db).waiting() {
            let (name, gid, column) = (place.table, place.gid, place.column)
            guard let table = tables[name], let local = try localID(name, gid, db), try currentRow(table, local, db) != nil,
                  let columnName = table.info.column(named: column)?.name else {
                try forgetAttachment(name, gid: gid, column: column, db)
                continue
            }
            if let rows, rows.table.lowercased() != name || rows.rowIDs.map({ !$0.contains(local) }) == true { continue }
            if eagerOnly {
                let scope = try eager[name] ?? eagerRows(table, subscriptions: subscriptions, db)
                eager[name] = scope
                if case .only(let kept) = scope, !kept.contains(local) { continue }
            }
            found[attachment.hash, default: (attachment, [])].1.append(PendingAttachment(table: table.name, rowID: local, column: columnName, attachment: attachment))
        }
        return found.values.sorted { $0.0.hash < $1.0.hash }
    }

    /// The rows of a table whose attachments are fetched eagerly.
    enum EagerRows {
        case all
        case only(Set<Int64>)
    }

    /// The rows of `table` whose attachments are fetched eagerly: its subscription's rows as
    /// the subscription says, the other rows (those here because subscribed rows point at
    /// them, or every row without subscriptions) as the configuration says.
    private func eagerRows(_ table: LocalTable, subscriptions: [SyncSubscription]?, _ db: Database) throws -> EagerRows {
        let fallback = configuration.attachmentFetch == .eager
        guard let subscription = subscriptions?.first(where: { $0.table.lowercased() == table.name.lowercased() }) else {
            return fallback ? .all : .only([])
        }
        let wanted = (subscription.attachments ?? configuration.attachmentFetch) == .eager
        guard wanted != fallback, let filter = try subscription.localFilter() else { return wanted ? .all : .only([]) }
        let kept = Set(try db.rowIDs(table: table.name, filter: filter))
        return .only(wanted ? kept : Set(try db.rowIDs(table: table.name)).subtracting(kept))
    }

    /// Chunk numbers of `attachment` fetched so far.
    func fetchedChunks(of attachment: SyncAttachment, _ db: Database) throws -> Set<Int> {
        try AttachmentLedger(db).chunkIndexes(of: attachment.hash)
    }

    func saveChunk(_ attachment: SyncAttachment, index: Int, _ data: Data, _ db: Database) throws {
        try AttachmentLedger(db).saveChunk(of: attachment.hash, index: index, data)
    }

    /// Writes a fetched attachment into the rows that wait for it (one transaction, authored
    /// as pulled changes: never pushed back), where the device has not written the column
    /// since; drops its chunks. Returns how many rows it filled, or nil when the chunks do not
    /// match the hash: they are dropped (in this transaction, which the caller commits) and
    /// fetched again next time.
    func fill(_ attachment: SyncAttachment, _ db: Database) throws -> Int? {
        guard let content = try fetchedContent(of: attachment, db) else {
            try AttachmentLedger(db).removeChunks(of: attachment.hash)
            return nil
        }
        return try fill(attachment, content: content, db)
    }

    /// Fills the rows waiting for `attachment` from a row here that holds its bytes; nil
    /// when none does (they are to fetch).
    func fillFromHeld(_ attachment: SyncAttachment, _ db: Database) throws -> Int? {
        guard let content = try heldContent(of: attachment, db) else { return nil }
        return try fill(attachment, content: content, db)
    }

    private func fill(_ attachment: SyncAttachment, content: Data, _ db: Database) throws -> Int {
        db.transactionAuthor = Self.syncAuthor
        let pending = try loadState(db).map { state in pendingRows(try unpushed(state, db), stamps: [:]) } ?? [:]
        var filled = 0
        let ledger = AttachmentLedger(db)
        for place in try ledger.waiting(for: attachment.hash) {
            let (name, gid, column) = (place.table, place.gid, place.column)
            try forgetAttachment(name, gid: gid, column: column, db)
            guard let table = tables[name], let local = try localID(name, gid, db), let current = try currentRow(table, local, db),
                  let columnName = table.info.column(named: column)?.name, current[columnName] == .null,
                  pending[RowKey(table: name, rowID: local)]?.columns[column] == nil else { continue }
            try update(table, local, [(columnName, .blob(content))], db)
            try held(attachment, name, gid: gid, column: column, db)
            filled += 1
        }
        try ledger.removeChunks(of: attachment.hash)
        return filled
    }
}

/// An attachment's bytes to upload before the push that names it.
struct AttachmentUpload: Sendable {
    var attachment: SyncAttachment
    var content: Data
}

/// An attachment a row points at whose bytes are not on this device yet: its column is NULL
/// until ``SyncClient/fetchAttachments(table:rowIDs:)`` (or an eager sync) fetches them.
public struct PendingAttachment: Sendable, Hashable {
    /// The table.
    public var table: String
    /// The row's local id.
    public var rowID: Int64
    /// The column.
    public var column: String
    /// What is to fetch.
    public var attachment: SyncAttachment
}
