/// A foreign writer's logged transactions: its triggers add every statement
/// to the newest logged transaction while that one is open (SQLite gives a
/// trigger no transaction identity), and a Sluice writer seals it, split
/// where stores of this process saw the file between two commits
/// (`ForeignCommitBoundaries`). So a foreign commit is never split; commits
/// no store saw apart share a logged transaction.
extension ChangeLog {
    /// The token of a foreign writer's open logged transaction, before the
    /// commit ends its triggers note (`LogTriggers.cutForNewConnection`).
    static let foreignToken = "foreign:"

    /// The condition on `sluice_transaction` of a foreign writer's newest
    /// logged transaction, which its next statement may still join (also
    /// one opened by the triggers of earlier versions, whose tokens named
    /// the statement's millisecond).
    static let openForeign = "seq = (SELECT max(seq) FROM sluice_transaction) AND token LIKE 'foreign%'"

    /// Closes the newest logged transaction to foreign writers: their next
    /// statement logs a transaction of its own. Where stores of this
    /// process saw the file between two of its commits
    /// (the writer's `LogWriter.foreignBoundaries`), it becomes one logged transaction per part
    /// between them. In a write transaction, so no foreign transaction is
    /// under way; then what readers take as a whole transaction stays whole.
    /// Writes only when there is one to close.
    ///
    /// A part is known to be one commit when the commit counter moved by
    /// one across it (`CommitCounter`, read on the snapshots that bound it,
    /// and here for the last part): it gets that commit's number, as a
    /// Sluice writer's transaction does. The log counts the parts it seals
    /// and those that may hold several commits (`foreignCommitCounts`).
    static func sealForeignTransaction(_ db: Database) throws {
        let rows = try db.fetchRows(sql: "SELECT seq, first_change, (SELECT max(id) FROM sluice_change), token FROM sluice_transaction WHERE \(openForeign)")
        guard let row = rows.first, case .integer(let sequence) = row[0] else { return }
        var parts: [(first: Int64, at: Int64?, commit: UInt32?)] = []
        if case .integer(let first) = row[1], case .integer(let last) = row[2] {
            var found = db.broker?.observer(of: LogWriter.self)?.foreignBoundaries?.cuts(sequence: sequence, firstChange: first, lastChange: last) ?? .init()
            found.adding(notedCuts(String(sqliteValue: row[3]) ?? "").filter { $0.after >= first && $0.after < last })
            // The counter at each part's start and end: before the first
            // commit, at each cut, now (the write lock is held: no commit lands).
            var bounds = [found.start] + found.cuts.map(\.commit)
            if found.cuts.last?.after != last { bounds.append(CommitCounter(connection: db.connection).read()) }
            let starts = [(first, Int64?.none)] + found.cuts.filter { $0.after < last }.map { ($0.after + 1, Int64?.some($0.at)) }
            for (index, start) in starts.enumerated() {
                let exact = bounds[index].flatMap { lower in bounds[index + 1].flatMap { upper in upper &- lower == 1 ? upper : nil } }
                parts.append((start.0, start.1, exact))
            }
        }
        if parts.isEmpty { parts = [(0, nil, nil)] }
        // From the last part back, so each update moves one part.
        for (offset, part) in parts.enumerated().reversed() {
            let seq = sequence + Int64(offset)
            let commit: SQLiteValue = part.commit.map { .integer(Int64($0)) } ?? .null
            if offset == 0 {
                try db.execute(sql: "UPDATE sluice_transaction SET token = NULL, commit_number = ? WHERE seq = ?", arguments: [commit, .integer(seq)])
                continue
            }
            try db.execute(sql: "INSERT INTO sluice_transaction (seq, at, author, token, first_change, commit_number) VALUES (?, ?, NULL, NULL, ?, ?)",
                           arguments: [.integer(seq), .integer(part.at ?? 0), .integer(part.first), commit])
            try db.execute(sql: "UPDATE sluice_change SET seq = ? WHERE id >= ? AND seq = ?",
                           arguments: [.integer(seq), .integer(part.first), .integer(sequence)])
        }
        let unproven = parts.filter { $0.commit == nil }.count
        try db.execute(sql: """
            INSERT INTO sluice_log_state (name, value) VALUES ('foreign_sealed', ?1), ('foreign_unproven', ?2)
            ON CONFLICT (name) DO UPDATE SET value = value + excluded.value
            """, arguments: [.integer(Int64(parts.count)), .integer(Int64(unproven))])
    }

    /// The commit ends the triggers noted in an open foreign transaction's
    /// token (`LogTriggers.cutForNewConnection`): `id@ms` after `foreign:`.
    static func notedCuts(_ token: String) -> [ForeignCommitBoundaries.Cut] {
        guard token.hasPrefix(foreignToken) else { return [] }
        return token.dropFirst(foreignToken.count).split(separator: " ").compactMap { note in
            let parts = note.split(separator: "@")
            guard parts.count == 2, let after = Int64(parts[0]), let at = Int64(parts[1]) else { return nil }
            return ForeignCommitBoundaries.Cut(after: after, at: at, commit: nil)
        }
    }

    /// How many logged transactions of foreign writers were closed, and how
    /// many of them may hold more than one commit (not seen apart: no store
    /// observed the file between them): those sealed here, and those a
    /// Sluice writer's transaction followed before anyone sealed them.
    static func foreignCommitCounts(_ db: Database) throws -> (sealed: Int, unproven: Int) {
        let rows = try db.fetchRows(sql: """
            SELECT (SELECT value FROM sluice_log_state WHERE name = 'foreign_sealed'),
                   (SELECT value FROM sluice_log_state WHERE name = 'foreign_unproven'),
                   (SELECT count(*) FROM sluice_transaction WHERE token LIKE 'foreign%' AND seq < (SELECT max(seq) FROM sluice_transaction))
            """)
        guard let row = rows.first else { return (0, 0) }
        let followed = Int(Int64(sqliteValue: row[2]) ?? 0)
        return (Int(Int64(sqliteValue: row[0]) ?? 0) + followed, Int(Int64(sqliteValue: row[1]) ?? 0) + followed)
    }

    /// The newest logged transaction when a foreign writer may still add to
    /// it (nil: none may grow).
    static func openForeignTransaction(_ db: Database) throws -> Int64? {
        try db.connection.scalarInt(sql: "SELECT seq FROM sluice_transaction WHERE \(openForeign)")
    }
}
