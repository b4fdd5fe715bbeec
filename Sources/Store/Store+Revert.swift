import Foundation

extension Store {
    // MARK: - Undo

    /// Undoes a logged transaction by writing its inverse as a new
    /// transaction (deleting what it inserted, restoring what it deleted,
    /// setting back the columns it updated), and returns that new
    /// transaction as logged (nil when there was nothing to undo). Reverting
    /// the result redoes the original.
    ///
    /// - Throws: `.conflict`, naming every table, row and column where a
    ///   later transaction changed a value this one wrote (nothing is
    ///   written then); `.historyExpired` is not possible here: the
    ///   transaction carries its own values.
    ///
    /// - Parameters:
    ///   - transaction: the logged transaction to undo.
    ///   - author: the author to record on the new transaction.
    /// - Returns: the new transaction as logged, or nil when there was nothing to undo.
    /// - Complexity: O(c log n) for c changed rows.
    @discardableResult
    public func revert(_ transaction: LoggedTransaction, author: String? = nil) throws -> LoggedTransaction? {
        let (_, sequence) = try writeLogged { db in
            if let author { db.transactionAuthor = author }
            try Revert(transaction: transaction).run(db)
        }
        guard let sequence else { return nil }
        return try read { db in
            try ChangeLog.transactions(after: HistoryToken(databaseID: transaction.token.databaseID, sequence: sequence - 1), limit: 1, db).first
        }
    }

    /// Reverts what later transactions left alone: like ``revert(_:author:)``,
    /// but the rows a later transaction changed since (or, of a row the
    /// transaction only updated, the columns changed since) are left as they
    /// are, and returned; the rest is reverted in one new transaction.
    ///
    /// - Parameters:
    ///   - transaction: the logged transaction to undo.
    ///   - author: the author to record on the new transaction.
    /// - Returns: the new transaction as logged (nil when nothing was left to
    ///   undo), and what was skipped.
    /// - Throws: `StoreError` when the store cannot be written.
    public func revertUnchanged(_ transaction: LoggedTransaction, author: String? = nil) throws -> RevertOutcome {
        let (skipped, sequence) = try writeLogged { db in
            if let author { db.transactionAuthor = author }
            return try Revert(transaction: transaction).run(db, skippingChanged: true)
        }
        guard let sequence else { return RevertOutcome(transaction: nil, skipped: skipped) }
        let reverted = try read { db in
            try ChangeLog.transactions(after: HistoryToken(databaseID: transaction.token.databaseID, sequence: sequence - 1), limit: 1, db).first
        }
        return RevertOutcome(transaction: reverted, skipped: skipped)
    }

    /// What later transactions changed of what `transaction` wrote: the rows
    /// (or columns) ``revert(_:author:)`` refuses to undo, and
    /// ``revertUnchanged(_:author:)`` leaves as they are. Empty when it
    /// can be reverted whole.
    ///
    /// - Parameter transaction: a logged transaction.
    /// - Returns: the rows and columns changed since.
    /// - Throws: `StoreError` when the store cannot be read.
    public func revertConflicts(of transaction: LoggedTransaction) throws -> [RevertConflict] {
        try read { db in try Revert(transaction: transaction).changedSince(db).conflicts }
    }
}

/// What ``Store/revertUnchanged(_:author:)`` did.
public struct RevertOutcome: Sendable, Hashable {
    /// The transaction that undid the rest, as logged (nil: nothing was left to undo).
    public let transaction: LoggedTransaction?
    /// What later transactions changed, left as it is.
    public let skipped: [RevertConflict]

    public init(transaction: LoggedTransaction?, skipped: [RevertConflict]) {
        self.transaction = transaction
        self.skipped = skipped
    }
}
