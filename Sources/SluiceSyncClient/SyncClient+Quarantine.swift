import Foundation
import SluiceSyncProtocol
import Sluice

extension SyncClient {
    /// A pulled transaction this device could not apply (a value its schema refuses, a
    /// column or table it does not have), set aside so that the ones after it are applied.
    /// It stays until ``retryQuarantined(in:configuration:)`` applies it (after a migration
    /// that accepts it, say) or ``discardQuarantined(in:configuration:)`` drops it.
    public struct QuarantinedTransaction: Sendable, Equatable {
        /// The transaction, as pulled.
        public var transaction: SyncTransaction
        /// Why it could not be applied, the last time it was tried.
        public var error: String
        /// When it was last tried.
        public var date: Date
    }

    /// The quarantined transactions of `store`, oldest first.
    ///
    /// - Parameters:
    ///   - store: the store.
    ///   - configuration: the sync configuration the store is synced with.
    /// - Returns: the transactions this device could not apply, each with its error.
    /// - Throws: `StoreError` when the sync tables cannot be read.
    public static func quarantined(in store: Store, configuration: SyncConfiguration) throws -> [QuarantinedTransaction] {
        let engine = SyncEngine(configuration: configuration)
        return try store.read { db in
            try engine.quarantined(db).map { QuarantinedTransaction(transaction: $0.transaction, error: $0.error, date: $0.date) }
        }
    }

    /// Applies the quarantined transactions of `store` again, oldest first, each as it is now
    /// (values a later transaction changed are applied anyway: it comes late); those that
    /// fail again stay, with the new error. Returns those that stay.
    ///
    /// - Parameters:
    ///   - store: the store.
    ///   - configuration: the sync configuration the store is synced with.
    /// - Returns: the transactions that still fail.
    /// - Throws: `StoreError` when the sync tables cannot be read or written.
    @discardableResult
    public static func retryQuarantined(in store: Store, configuration: SyncConfiguration) throws -> [QuarantinedTransaction] {
        let engine = SyncEngine(configuration: configuration)
        // The synced tables as they are now (a migration may have made them accept these).
        let waiting = try store.read { db in
            try engine.loadTables(db)
            return try engine.quarantined(db)
        }
        for (transaction, _, _) in waiting {
            guard let seq = transaction.seq else { continue }
            do {
                let merged = try store.write { db in
                    let merged = try engine.apply(transaction, again: true, db)
                    try engine.release(seq, db)
                    return merged
                }
                if merged { try store.write { db in try engine.writeMerges(db) } }
            } catch let error as StoreError where SyncEngine.isQuarantinable(error) {
                try store.write { db in try engine.requarantine(seq, error: error, db) }
            }
        }
        return try quarantined(in: store, configuration: configuration)
    }

    /// Drops the quarantined transactions of `store`: this device keeps its rows without
    /// them. Returns how many it dropped.
    ///
    /// - Parameters:
    ///   - store: the store.
    ///   - configuration: the sync configuration the store is synced with (the quarantine
    ///     does not depend on it; kept so the call reads as ``quarantined(in:configuration:)``).
    /// - Returns: how many transactions were dropped.
    /// - Throws: `StoreError` when the sync tables cannot be written.
    @discardableResult
    public static func discardQuarantined(in store: Store, configuration: SyncConfiguration) throws -> Int {
        try store.write { db in
            let quarantine = QuarantineTable(db)
            let count = try quarantine.count()
            if count > 0 { try quarantine.removeAll() }
            try ConflictInbox(db).removeAllQuarantined()
            return count
        }
    }
}
