import SluiceSyncProtocol
import Sluice

extension SyncClient {
    // MARK: - Pull

    /// Where a pull of the history starts: the device's state, and whether it started from a
    /// snapshot. A device that synced a subset starts the history again: it lacks the other rows.
    static func pullStart(_ engine: SyncEngine, _ db: Database) throws -> PullStart {
        if try engine.appliedSubscriptions(db) != nil, var state = try engine.loadState(db) {
            state.cursor = 0
            try engine.save(state, db)
            try engine.saveAppliedSubscriptions(nil, db)
        }
        return PullStart(state: try engine.loadState(db), tookSnapshot: try engine.tookSnapshot(db))
    }

    /// What ``pullStart(_:_:)`` read.
    struct PullStart: Sendable {
        var state: SyncEngine.State?
        var tookSnapshot: Bool
    }

    /// Pulls and applies pages until the cursor reaches the head, counting in `report` the
    /// transactions of other devices it applied and the rows it took as current values.
    /// `start` is ``pullStart(_:_:)`` read in a transaction just before (nil: read here).
    func pullAll(into report: inout Report, from start: PullStart? = nil) async throws {
        if let subscriptions {
            report.rows += try await pullRows(subscriptions)
            return
        }
        let engine = engine
        let state = if let start { start } else { try await store.write { db in try Self.pullStart(engine, db) } }
        let device = state.state?.device
        var cursor = state.state?.cursor ?? 0
        // A new device starts from a snapshot of the rows and the history after it. One it
        // cannot apply (a value its tables refuse) replays the history instead, where each
        // transaction it cannot apply is quarantined alone; so does one whose service has no
        // rows endpoint (older than partial sync: 404).
        if cursor == 0, !state.tookSnapshot, engine.configuration.startsFromSnapshot {
            do {
                report.rows += try await pullSnapshot()
                cursor = try await store.read { db in try engine.loadState(db)?.cursor ?? 0 }
            } catch let error as StoreError where SyncEngine.isQuarantinable(error) {
                cursor = 0
            } catch SyncClientError.rejected(let status, _) where status == 404 {
                cursor = 0
            }
        }
        // The next page, asked for while this one is applied (a page is taken whole: the
        // cursor then is its last transaction's).
        var ahead: Task<PullResponse, any Error>?
        defer { ahead?.cancel() }
        while true {
            let page: PullResponse
            do {
                if let next = ahead {
                    ahead = nil
                    page = try await next.value
                } else if let offered = takePrefetched(at: cursor) {
                    page = offered
                } else {
                    page = try await transport.pull(since: cursor, device: device)
                }
            } catch SyncClientError.rejected(_, let body) where body.code == .compacted {
                // Away longer than the service keeps history: a snapshot, then on from its head.
                report.rows += try await pullSnapshot()
                cursor = try await store.read { db in try engine.loadState(db)?.cursor ?? 0 }
                continue
            }
            report.pulled += page.transactions.count(where: { $0.device != device })
            if let last = page.transactions.last?.seq, last < page.head {
                let (transport, since) = (transport, max(cursor, last))
                ahead = Task { try await transport.pull(since: since, device: device) }
            }
            var rest = page.transactions[...]
            while !rest.isEmpty {
                let done: Int
                do {
                    done = try await applyBatch(Array(rest))
                } catch let error as StoreError where SyncEngine.isQuarantinable(error) {
                    // Only COMMIT (a deferred foreign key) or a constraint that rolls back the
                    // whole transaction fails so: the first transaction alone, as its own
                    // local transaction, tells whether it was the one.
                    done = try await applyAlone(rest[rest.startIndex])
                }
                rest = rest.dropFirst(done)
            }
            // Each transaction taken (applied, quarantined, or this store's own) moved the
            // cursor to its number.
            guard let last = page.transactions.last?.seq, last < page.head else { return }
            cursor = max(cursor, last)
        }
    }

    /// Keeps a page `follow()`'s long poll brought, after `since`.
    func offer(_ page: PullResponse, since: Int64) {
        prefetched = (since, page)
    }

    /// The page offered after `cursor`, if any (taken); one after an older cursor is dropped.
    private func takePrefetched(at cursor: Int64) -> PullResponse? {
        guard let offered = prefetched, offered.since <= cursor else { return nil }
        prefetched = nil
        return offered.since == cursor ? offered.page : nil
    }

    /// Applies pulled transactions, oldest first, as one local transaction (one commit and
    /// one fsync for a page, not one per pulled transaction; live queries see one changeset),
    /// each in a savepoint of its own: one this device cannot apply is rolled back alone and
    /// quarantined, and the others go on. Takes only the first while this store has local
    /// changes to push, and stops after one whose merge results must be written (as a local
    /// transaction of their own, which is pushed). Returns how many it took.
    private func applyBatch(_ transactions: [SyncTransaction]) async throws -> Int {
        let engine = engine
        let (taken, merged) = try await store.write { db -> (Int, Bool) in
            // With local changes unpushed, each pulled transaction settles its conflicts
            // against what the log says the ones before it overwrote: one per commit.
            let batch = try engine.pendingCount(db) == 0 ? transactions[...] : transactions.prefix(1)
            for (index, transaction) in batch.enumerated() {
                do {
                    if try db.savepoint({ db in try engine.apply(transaction, db) }) { return (index + 1, true) }
                } catch let error as StoreError where SyncEngine.isQuarantinable(error) {
                    // SQLite rolled the whole transaction back (ON CONFLICT ROLLBACK): the
                    // batch is gone, and the caller applies the transactions one by one.
                    guard db.isInsideTransaction else { throw error }
                    // One transaction this device cannot apply does not stop the others.
                    try engine.quarantine(transaction, error: error, db)
                }
            }
            return (batch.count, false)
        }
        if merged { try await store.write { db in try engine.writeMerges(db) } }
        return taken
    }

    /// Applies one pulled transaction as one local transaction, quarantining it when this
    /// device cannot apply it. Returns 1.
    private func applyAlone(_ transaction: SyncTransaction) async throws -> Int {
        let engine = engine
        do {
            if try await store.write({ db in try engine.apply(transaction, db) }) {
                try await store.write { db in try engine.writeMerges(db) }
            }
        } catch let error as StoreError where SyncEngine.isQuarantinable(error) {
            try await store.write { db in try engine.quarantine(transaction, error: error, db) }
        }
        return 1
    }
}
