import Foundation
import SluiceSyncProtocol

/// How the service decides a push, whatever stores the history (``PushStorage``):
///
/// - **Identity.** A device id belongs to the token that first pushed under it; another
///   token's push under it is refused (`identity_conflict`), as is a push that does not
///   continue the id's history (a number it used for another transaction: a copied store).
/// - **Retries.** Transactions the device pushed already (same number and clock) are skipped.
/// - **Replays.** A transaction another device pushed already (number, clock and changes
///   alike) is refused (`replay`): it would roll rows back.
/// - **Order.** A push based on an older head goes after what came since when no row or
///   column is written by both, else it is sent back (`behind`): the device pulls and
///   rebases. So is one whose base the history pruned, or more than
///   ``longestSequencedGap`` transactions back. The device's own transactions since its
///   base are not checked against: what it pushes later was made on top of them.
/// - **Upload order.** A part of a device's first upload that does not follow the last part
///   taken is refused (`out_of_order`): a device sends its next part before the part ahead
///   of it is answered (when the service says it keeps the order:
///   `PushResponse.keepsUploadOrder`), and that one may arrive second.
/// - **Clocks.** A transaction's clock further ahead of the service's than `maximumSkew` is
///   stored as the service's clock (its own kept as `sent`): one device's clock cannot win
///   every later conflict, nor drag every device's clock with it.
public enum PushDecision {
    /// The most transactions a push may come after without its device having pulled them.
    public static let longestSequencedGap: Int64 = 1_000

    /// Decides `request` and, when it goes on, has `storage` append it (each transaction with
    /// the clock it is stored with, and `sent` when that is not its own).
    public static func push(_ request: PushRequest, token: String, maximumSkew: Duration = .seconds(60), now: Date = Date(),
                            storage: some PushStorage) async throws -> Result<PushResponse, SyncErrorBody> {
        guard let facts = try await storage.claim(device: request.device, token: token, clocks: request.transactions.map(\.clock.rawValue)) else {
            return .failure(SyncErrorBody(.identityConflict, message: "device '\(request.device)' belongs to another token: push under a new device id"))
        }
        let lastLocal = facts.lastLocal ?? .min
        let repeated = request.transactions.filter { $0.local <= lastLocal }
        if !repeated.isEmpty {
            let stored = try await storage.sentClocks(device: request.device, locals: repeated.map(\.local))
            if let other = repeated.first(where: { stored[$0.local] != $0.clock.rawValue }) {
                return .failure(SyncErrorBody(.identityConflict, message: """
                    device '\(request.device)' already pushed \(stored[other.local] == nil ? "past" : "another transaction as") number \(other.local): \
                    this store is a copy or claims another device's id; push under a new device id
                    """))
            }
        }
        let fresh = request.transactions.filter { $0.local > lastLocal }
        if let first = fresh.first, first.local < 0, let last = facts.lastLocal, last < 0, first.local != last + 1 {
            return .failure(SyncErrorBody(.outOfOrder, message: """
                device '\(request.device)' sent part \(first.local + (1 << 40)) of its first upload after part \(last + (1 << 40)): \
                send it again once part \(last + 1 + (1 << 40)) is taken
                """))
        }
        if !fresh.isEmpty, facts.othersShareAClock, let replayed = try await replayed(fresh, device: request.device, storage) {
            return .failure(SyncErrorBody(.replay, message: """
                transaction \(replayed.local) is one device '\(replayed.device)' pushed already (same clock and changes): \
                a replayed push would roll rows back
                """))
        }
        func behind(_ head: Int64) -> Result<PushResponse, SyncErrorBody> {
            .failure(SyncErrorBody(.behind, message: "the history is at \(head), the push was based on \(request.base) and writes what came since: pull first"))
        }
        // What is committed already is checked before the lock (nothing when the base was
        // the head a moment ago: a following device's push); under it, only what committed
        // meanwhile. The early read began after `facts.head` was read, so it saw every
        // transaction up to that head, the device's own that it leaves out included (a part of
        // a first upload sent ahead: under the lock, nothing is read again).
        var checked = request.base
        if !fresh.isEmpty, facts.head > request.base {
            let early = try await commute(fresh, after: request.base, device: request.device, storage)
            guard early.commutes else { return behind(early.last) }
            checked = max(early.last, facts.head)
        }
        let (head, pruned) = try await storage.headAndPruned(forAppend: !fresh.isEmpty)
        guard !fresh.isEmpty else { return .success(PushResponse(head: head, appended: 0)) }
        // What came after the base is pruned: nothing left to check the push against.
        if request.base < pruned { return behind(head) }
        if head != request.base {
            guard request.base < head, head - request.base <= longestSequencedGap else { return behind(head) }
            if head > checked {
                guard try await commute(fresh, after: checked, device: request.device, storage).commutes else { return behind(head) }
            }
        }
        return try await storage.append(clamped(fresh, maximumSkew: maximumSkew, now: now), device: request.device, after: head)
    }

    /// `transactions` with each clock further ahead of `now` than `maximumSkew` replaced by
    /// the service's clock (`now`), the device's kept as `sent`.
    static func clamped(_ transactions: [SyncTransaction], maximumSkew: Duration, now: Date) -> [SyncTransaction] {
        let skew = Double(maximumSkew.components.seconds) + Double(maximumSkew.components.attoseconds) / 1e18
        let bound = HybridClock(date: now.addingTimeInterval(skew))
        return transactions.map { transaction in
            var stored = transaction
            stored.clock = transaction.clock > bound ? HybridClock(date: now) : max(transaction.clock, .zero)
            stored.sent = stored.clock == transaction.clock ? nil : transaction.clock
            return stored
        }
    }

    /// The first of `transactions` that another device pushed already, clock, number and
    /// changes alike (an old push sent again under a new device id: a copy of a store file
    /// has the original's log, numbers included), with that device's id.
    ///
    /// The number matters: two devices that make the same change in the same millisecond
    /// (both delete one row) have the same clock and changes, and refusing the second as a
    /// replay left it refused at every try.
    static func replayed(_ transactions: [SyncTransaction], device: String, _ storage: some PushStorage) async throws -> (local: Int64, device: String)? {
        for stored in try await storage.transactions(withClocks: transactions.map(\.clock.rawValue), notBy: device) {
            if let match = transactions.first(where: { $0.clock.rawValue == stored.clock && $0.local == stored.local && $0.changes == stored.changes }) {
                return (match.local, stored.device)
            }
        }
        return nil
    }

    /// Whether `transactions` write nothing the history after `base` wrote, `device`'s own
    /// transactions aside (the device made these on top of them): no column of a row both
    /// update, and no row one inserts or deletes that the other writes at all; and the last
    /// number it read (`base` when there was nothing). More than ``longestSequencedGap``
    /// transactions after `base` do not commute.
    ///
    /// Leaving the device's own out is what lets it send the next part of its first upload
    /// on the base the part ahead of it had: that part's 10,000 rows are not read again.
    static func commute(_ transactions: [SyncTransaction], after base: Int64, device: String,
                        _ storage: some PushStorage) async throws -> (commutes: Bool, last: Int64) {
        var columns: [String: Set<String>] = [:]
        var whole: Set<String> = []
        var last = base
        var count: Int64 = 0
        for footprint in try await storage.footprints(after: base, limit: longestSequencedGap + 1, notBy: device) {
            if footprint.seq != last {
                last = footprint.seq
                count += 1
            }
            guard let table = footprint.table, let id = footprint.id else { continue }
            let row = table.lowercased() + "\u{0}" + id
            if footprint.op == SyncChange.Operation.update.rawValue {
                columns[row, default: []].formUnion((footprint.columns ?? []).map { $0.lowercased() })
            } else {
                whole.insert(row)
            }
        }
        guard count <= longestSequencedGap else { return (false, last) }
        for transaction in transactions {
            for change in transaction.changes {
                let row = change.table.lowercased() + "\u{0}" + change.id
                if whole.contains(row) { return (false, last) }
                if change.op != .update {
                    if columns[row] != nil { return (false, last) }
                } else if let written = columns[row], (change.values ?? [:]).keys.contains(where: { written.contains($0.lowercased()) }) {
                    return (false, last)
                }
            }
        }
        return (true, last)
    }
}
