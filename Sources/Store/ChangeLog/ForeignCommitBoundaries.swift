import Foundation
import Synchronization

/// Where foreign writers' commits end inside their open logged transaction,
/// as this store's observations saw the file.
///
/// SQLite gives a trigger no transaction identity, so a foreign writer's
/// triggers add each statement to the open logged transaction (`LogTriggers`)
/// until a Sluice writer seals it. But every snapshot an observation reads
/// lies between two commits: the log's last change on it ends a commit.
/// Each one seen while a foreign transaction is open is kept here, and the
/// seal (`ChangeLog.sealForeignTransaction`) cuts the transaction there:
/// commits seen apart are logged apart; only commits that landed between
/// two looks share a logged transaction (merged whole, never split).
///
/// Thread-safe.
final class ForeignCommitBoundaries: Sendable {
    /// A place to cut: after change `after`, seen at `at` (milliseconds
    /// since 1970) on a snapshot whose commit counter read `commit`.
    struct Cut: Equatable, Sendable {
        var after: Int64
        var at: Int64
        var commit: UInt32?
    }

    /// Where to cut one open foreign transaction; `start` is the commit
    /// counter just before its first commit, when a snapshot showed it.
    struct Cuts: Equatable, Sendable {
        var cuts: [Cut] = []
        var start: UInt32?

        /// Adds the cuts the triggers noted (`ChangeLog.notedCuts`), where no snapshot saw one.
        mutating func adding(_ noted: [Cut]) {
            let known = Set(cuts.map(\.after))
            cuts += noted.filter { !known.contains($0.after) }
            cuts.sort { $0.after < $1.after }
        }
    }

    private struct State {
        /// The open foreign transaction the cuts belong to: its sequence and first change.
        var transaction: (sequence: Int64, firstChange: Int64)?
        var cuts: [Cut] = []
        /// The last snapshot seen with no open foreign transaction: its last change and commit.
        var before: (lastChange: Int64, commit: UInt32)?
        /// The counter before `transaction`'s first commit, when `before` showed it.
        var start: UInt32?
    }

    /// At most this many cuts are kept for one open transaction (a foreign
    /// writer committing for hours with no Sluice writer to seal): the
    /// oldest go first, and their commits share a logged transaction.
    static let limit = 100_000

    private let state = Mutex(State())

    /// Notes a position an observation read: when a foreign transaction is
    /// open there, its last change ends a commit; when none is, the one
    /// whose cuts are kept was sealed or followed by another (forgotten).
    func observe(_ position: ChangeLog.Position) {
        let milliseconds = Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
        state.withLock { state in
            guard let first = position.openForeignFirstChange, position.lastChange >= first else {
                if let kept = state.transaction, position.sequence >= kept.sequence { state = State() }
                state.before = position.commit.map { (position.lastChange, $0) }
                return
            }
            if state.transaction?.sequence != position.sequence || state.transaction?.firstChange != first {
                let start = state.before.flatMap { $0.lastChange == first - 1 ? $0.commit : nil }
                state = State(transaction: (position.sequence, first), start: start)
            }
            if let last = state.cuts.last, last.after >= position.lastChange { return }
            state.cuts.append(Cut(after: position.lastChange, at: milliseconds, commit: position.commit))
            if state.cuts.count > Self.limit { state.cuts.removeFirst(state.cuts.count - Self.limit) }
        }
    }

    /// Whether a seal would cut nothing (then no SQL is needed to know it).
    var isEmpty: Bool {
        state.withLock { $0.cuts.isEmpty }
    }

    /// Where to cut the open foreign transaction `sequence`, whose changes
    /// run from `firstChange` through `lastChange`: the cuts seen in it,
    /// oldest first, each before a change of it. They are kept until an
    /// observation sees it sealed (a seal that rolls back is made again).
    func cuts(sequence: Int64, firstChange: Int64, lastChange: Int64) -> Cuts {
        state.withLock { state in
            guard let kept = state.transaction, kept.sequence == sequence, kept.firstChange == firstChange else { return Cuts() }
            // A cut at the last change ends the last part: its commit bounds it.
            return Cuts(cuts: state.cuts.filter { $0.after >= firstChange && $0.after <= lastChange }, start: state.start)
        }
    }
}
