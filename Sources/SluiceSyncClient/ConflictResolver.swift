import Foundation
import SluiceSyncProtocol
import Sluice

/// How a device settles a pulled change against its own unpushed one: the conflict
/// policies (``ConflictPolicy``) per column and the delete rule (``DeleteConflictRule``), as pure
/// functions of the two sides, with no store. ``SyncEngine`` applies what they decide.
///
/// The service's history is linear and every device rebases its unpushed changes onto
/// what it pulls, so each conflict is decided once, by the device that holds the unpushed
/// side, and the outcome travels as an ordinary change.
struct ConflictResolver: Sendable {
    /// This device's unpushed value of a column.
    struct Local: Sendable, Equatable {
        /// When this device committed it.
        var clock: HybridClock
        /// The value.
        var value: SQLiteValue
        /// The value before this device's unpushed changes (nil when it inserted the row).
        var base: SQLiteValue?
    }

    /// The pulled side: when it was written, and by whom when the service says (a
    /// transaction of its history names its device; a subset page names none: empty).
    struct Remote: Sendable, Equatable {
        var clock: HybridClock
        var device: String
    }

    /// What becomes of one column a pulled update writes.
    enum Column: Sendable, Equatable {
        /// The pulled value is applied; the unpushed one, if any, is dropped.
        case applyRemote
        /// The unpushed value stays (and its push overwrites the pulled one everywhere).
        case keepLocal
        /// The pulled value is applied now and `merged` is written after it, as a change of
        /// this device's (pushed).
        case merge(SQLiteValue)
    }

    /// What becomes of a row with unpushed changes here that a pulled delete removes, or a
    /// row deleted here (unpushed) that a pulled update changes.
    enum Row: Sendable, Equatable {
        /// The delete wins: the row is gone (the unpushed update, or the pulled one, dropped).
        case deleted
        /// The update wins: the row stays, or comes back with the update applied, and the
        /// next push brings it back everywhere.
        case kept
    }

    let configuration: SyncConfiguration

    /// One column: `remote` is the pulled value, `local` this device's unpushed one (nil
    /// when it has none: the pulled value is applied).
    func resolve(table: String, column: String, local: Local?, remote value: SQLiteValue, from remote: Remote) -> Column {
        guard let local else { return .applyRemote }
        switch configuration.policy(table: table, column: column) {
        case .lastWriterWins:
            // The later clock wins; on equal clocks the value the service holds (it was
            // pushed first), whoever wrote it: the same rule for a history transaction and
            // a subset page, which names no writer per column.
            return remote.clock >= local.clock ? .applyRemote : .keepLocal
        case .serverWins:
            return .applyRemote
        case .deviceWins:
            return .keepLocal
        case .merge(let merge):
            return .merge(merge(MergeConflict(table: table, column: column, base: local.base, local: local.value, remote: value)))
        }
    }

    /// The rule that settles `table.column`, as the conflict inbox names it.
    func rule(table: String, column: String) -> SyncConflict.Rule {
        switch configuration.policy(table: table, column: column) {
        case .lastWriterWins: .lastWriterWins
        case .serverWins: .serverWins
        case .deviceWins: .deviceWins
        case .merge: .merge
        }
    }

    /// A pulled delete of a row this device changed (unpushed): `changed` is whether any of
    /// its columns is still unpushed.
    func resolveDelete(ofRowChangedHere changed: Bool) -> Row {
        configuration.deleteRule == .updateWins && changed ? .kept : .deleted
    }

    /// A pulled update of a row this device deleted (unpushed).
    func resolveUpdateOfRowDeletedHere() -> Row {
        configuration.deleteRule == .updateWins ? .kept : .deleted
    }
}
