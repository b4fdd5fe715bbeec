import CSQLite

/// Whether a commit wrote anything to the main database, as the connection's
/// pager statistics tell (no SQL: usable in the commit hook).
///
/// A write transaction can commit without writing a page: an `UPDATE` that
/// sets a row's values to what they are leaves its page alone (SQLite
/// compares the cell before marking the page dirty), yet the update hooks
/// report the row. Such a commit adds no frame to the WAL and does not move
/// the file's commit counter, so it must not be counted as a commit.
extension Connection {
    /// What `committedMainPages(since:)` compares: the pages this connection has
    /// written so far (`SQLITE_DBSTATUS_CACHE_WRITE`, every schema), and
    /// whether a schema other than `main` is in a write transaction.
    struct PageWrites {
        fileprivate let written: Int32
        fileprivate let otherSchemaWriting: Bool
    }

    /// The page-write statistics now (call in the commit hook, before the
    /// pages are written).
    var pageWrites: PageWrites {
        var current: Int32 = 0, highwater: Int32 = 0
        sqlite3_db_status(handle, SQLITE_DBSTATUS_CACHE_WRITE, &current, &highwater, 0)
        var otherSchemaWriting = false
        var index: Int32 = 1    // 0 is main
        while let name = sqlite3_db_name(handle, index) {
            if sqlite3_txn_state(handle, name) == SQLITE_TXN_WRITE { otherSchemaWriting = true }
            index += 1
        }
        return PageWrites(written: current, otherSchemaWriting: otherSchemaWriting)
    }

    /// Whether the commit after `before` certainly wrote pages of the main
    /// database (call after COMMIT). False also when it cannot be told: the
    /// transaction wrote `temp` or an attached database too, whose pages
    /// count in the same statistic.
    func committedMainPages(since before: PageWrites) -> Bool {
        !before.otherSchemaWriting && pageWrites.written != before.written
    }
}
