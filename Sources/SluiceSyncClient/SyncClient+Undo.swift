import Foundation
import SluiceSyncProtocol
import Sluice

/// A transaction of the store's history, with the device that wrote it: this device's own
/// (pushed or not), or another's that sync pulled and applied here.
public struct SyncedTransaction: Sendable, Hashable, Identifiable {
    /// The transaction as this store logged it (its rows by their local ids).
    public let transaction: LoggedTransaction
    /// The device that wrote it (this device's id for its own).
    public let device: String
    /// Its place in the space's history, for a pulled one (nil for this device's own).
    public let seq: Int64?
    /// When its writer committed it, for a pulled one.
    public let clock: HybridClock?

    /// Whether this device wrote it.
    public var isLocal: Bool { seq == nil }
    public var id: HistoryToken { transaction.token }
}

extension SyncClient {
    /// The author of the transactions that revert (or redo) one (pushed like any other).
    public static let revertAuthor = "sync-revert"

    /// The store's transactions after `token` (from the oldest the log holds when nil), oldest
    /// first, each with the device that wrote it: the history to undo from, across devices
    /// and relaunches (the log and the record of who wrote what are in the store's file).
    /// Pulled snapshots and rounds of a subscription's rows name no device: they are not listed.
    ///
    /// - Parameters:
    ///   - token: where to start (nil: the oldest transaction the log holds).
    ///   - limit: at most this many, the oldest first.
    /// - Returns: the transactions.
    /// - Throws: `StoreError` (`.historyExpired` when retention removed what follows `token`).
    public func history(after token: HistoryToken? = nil, limit: Int? = nil) async throws -> [SyncedTransaction] {
        let store = store
        let engine = engine
        let start = try token ?? store.earliestToken
        return try await store.read { db in
            let own = try engine.loadState(db)?.device ?? ""
            let transactions = try db.loggedTransactions(after: start, limit: limit)
            guard let first = transactions.first?.token.sequence, let last = transactions.last?.token.sequence else { return [] }
            let origins = try TransactionOrigins(db).origins(of: first...last)
            return transactions.compactMap { transaction in
                if let origin = origins[transaction.token.sequence] {
                    return SyncedTransaction(transaction: transaction, device: origin.device, seq: origin.spaceSeq, clock: origin.clock)
                }
                // A pulled page or snapshot without an origin: not one device's.
                guard transaction.author != SyncEngine.syncAuthor else { return nil }
                return SyncedTransaction(transaction: transaction, device: own, seq: nil, clock: nil)
            }
        }
    }

    /// The newest transaction `device` wrote that this store holds ("undo what the laptop
    /// just did"), or nil.
    ///
    /// - Parameter device: a device's id (``deviceID`` on that device).
    /// - Returns: its newest transaction here.
    /// - Throws: `StoreError` when the history cannot be read.
    public func lastTransaction(by device: String) async throws -> SyncedTransaction? {
        try await history().last { $0.device == device }
    }

    /// Undoes a transaction, this device's or another's, as a new local transaction that
    /// syncs like any other (authored ``revertAuthor``): every device ends without its
    /// changes. Reverting the revert redoes it.
    ///
    /// When later transactions changed some of the rows it wrote, nothing is written unless
    /// `skippingChanged`: the error names every such row (see
    /// ``revertConflicts(of:)``); with it, those rows (or, of rows it only updated, those
    /// columns) are left as they are and the rest is undone.
    ///
    /// - Parameters:
    ///   - transaction: the transaction to undo.
    ///   - skippingChanged: undo what later transactions left alone, and say what they did not.
    /// - Returns: the new transaction and what was skipped.
    /// - Throws: `StoreError` `.conflict` naming the rows changed since (without
    ///   `skippingChanged`); the store is left as it was.
    @discardableResult
    public func revert(_ transaction: SyncedTransaction, skippingChanged: Bool = false) async throws -> RevertOutcome {
        let store = store
        if skippingChanged { return try store.revertUnchanged(transaction.transaction, author: Self.revertAuthor) }
        return RevertOutcome(transaction: try store.revert(transaction.transaction, author: Self.revertAuthor), skipped: [])
    }

    /// What later transactions changed of what `transaction` wrote (empty: it reverts whole).
    ///
    /// - Parameter transaction: a transaction of ``history(after:limit:)``.
    /// - Returns: the rows and columns changed since.
    /// - Throws: `StoreError` when the store cannot be read.
    public nonisolated func revertConflicts(of transaction: SyncedTransaction) throws -> [RevertConflict] {
        try store.revertConflicts(of: transaction.transaction)
    }
}
