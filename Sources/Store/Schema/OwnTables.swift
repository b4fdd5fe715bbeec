/// Sluice's own tables (`sluice_*`: the change log, migrations, the sync client's state): out
/// of the app's table list, the change log and live queries — except those named
/// `sluice_live_*`, which live queries observe as they do the app's (the sync client's
/// conflict inbox), and which the log still leaves out (they hold this device's own
/// bookkeeping, not the app's data).
///
/// A transaction that writes such a table and logs other rows records no commit number in
/// the log: other connections then read the tables the log does not cover again, so their
/// observations of the unlogged table stay exact.
enum OwnTables {
    /// The prefix of Sluice's own tables that live queries observe.
    static let observedPrefix = "sluice_live_"

    /// Whether the change log leaves `table`'s changes out (a table of Sluice's own that
    /// live queries observe: the only such table the hooks report).
    static func isUnlogged(_ table: String) -> Bool {
        table.utf8.starts(with: observedPrefix.utf8)
    }
}
