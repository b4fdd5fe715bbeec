import CSQLite

/// The change log's capture without SQLite's preupdate hook: temporary
/// triggers on every table of the writer's connection (the SQL of
/// `LogTriggers`, grouped by `sluice_txn()`, this connection's transaction),
/// with `recursive_triggers` on so that `REPLACE` deletions fire them.
/// They are dropped before any statement that changes the schema (SQLite
/// refuses to drop a column a trigger names) and installed again before the
/// next statement.
///
/// Used only on the writer's queue.
final class TemporaryLogTriggers {
    private unowned let db: Database
    private var installedGeneration: Int?
    private var installedTables: [String] = []
    private var installing = false
    /// Tells this connection's transactions apart for `sluice_txn()`.
    private var transactionNumber: Int64 = 0
    private let connectionID = String(UInt64.random(in: 0...UInt64.max), radix: 36)

    init(db: Database) {
        self.db = db
        registerTokenFunction()
    }

    /// The transaction committed or rolled back: the next one gets a new token.
    func transactionEnded() {
        transactionNumber += 1
    }

    /// Before each statement: off for schema changes, back on after them.
    func statementWillRun(_ notes: StatementNotes) {
        guard !installing else { return }
        if notes.changesSchema {
            removeTriggers()
        } else if installedGeneration != db.schema.generation {
            installTriggers()
        }
    }

    /// The sequence of the transaction row this transaction's triggers made,
    /// if any (`logTablesGeneration`: the schema generation at which the
    /// log's tables were last seen, kept by the caller).
    func openTransaction(_ db: Database, logTablesGeneration: inout Int?) throws -> Int64? {
        if logTablesGeneration != db.schema.generation {
            guard try ChangeLog.exists(db) else { return nil }
            logTablesGeneration = db.schema.generation
        }
        let rows = try db.fetchRows(sql: "SELECT seq FROM sluice_transaction WHERE seq = (SELECT max(seq) FROM sluice_transaction) AND token = sluice_txn()")
        return rows.first.flatMap { Int64(sqliteValue: $0[0]) }
    }

    /// `sluice_txn()`: this connection's current transaction, for the triggers.
    private func registerTokenFunction() {
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_create_function_v2(db.connection.handle, "sluice_txn", 0, SQLITE_UTF8, context, { context, _, _ in
            guard let data = sqlite3_user_data(context) else { return }
            let triggers = Unmanaged<TemporaryLogTriggers>.fromOpaque(data).takeUnretainedValue()
            var token = Array("\(triggers.connectionID).\(triggers.transactionNumber)".utf8CString)
            sqlite3_result_text(context, &token, -1, _sluice_transient())
        }, nil, nil, nil)
    }

    private func removeTriggers() {
        guard installedGeneration != nil else { return }
        installing = true
        defer { installing = false }
        for table in installedTables {
            for operation in LogTriggers.operations {
                let name = LogTriggers.name(table: table, operation: operation, temporary: true)
                try? db.connection.execute(script: "DROP TRIGGER IF EXISTS temp.\(quoteIdentifier(name))")
            }
        }
        installedTables = []
        installedGeneration = nil
    }

    private func installTriggers() {
        removeTriggers()
        installing = true
        defer { installing = false }
        do {
            try db.connection.execute(script: "PRAGMA recursive_triggers = ON")
            guard try ChangeLog.exists(db) else { return }
            for name in try db.tableNames() {
                guard let info = try? db.tableInfo(name), info.kind == .table else { continue }
                for sql in LogTriggers.sql(for: info, temporary: true) {
                    try db.connection.execute(script: sql)
                }
                installedTables.append(info.name)
            }
            installedGeneration = db.schema.generation
        } catch {
            // Left uninstalled: tried again before the next statement.
        }
    }
}

// The triggers belong to the writer's queue.
@available(*, unavailable)
extension TemporaryLogTriggers: Sendable {}
