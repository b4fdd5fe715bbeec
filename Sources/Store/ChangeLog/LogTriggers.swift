/// The SQL of triggers that fill the change log: permanent ones for foreign
/// writers (`trackForeignWriters`, `sluice track`) and temporary ones on a
/// Sluice writer whose SQLite has no preupdate hook. Both write exactly
/// what the preupdate capture writes (`LogValues`' encoding, only changed
/// columns for an update, nothing for an update that changes nothing).
///
/// Identifiers come from `TableInfo`, never from input.
enum LogTriggers {
    static let operations = ["insert", "update", "delete"]

    /// The name of a table's trigger for one operation.
    static func name(table: String, operation: String, temporary: Bool) -> String {
        (temporary ? "sluice_capture_" : ChangeLog.triggerPrefix) + table + "_" + operation
    }

    /// `CREATE TRIGGER` statements for insert, update and delete on `table`.
    ///
    /// A permanent trigger runs only where `sluice_foreign.active` reads 1:
    /// Sluice writers read it as NULL and log by themselves. SQLite gives a
    /// trigger no transaction identity, so it adds its rows to the newest
    /// logged transaction while that one is a foreign writer's open one
    /// (token `foreign:`), and opens one otherwise: a foreign commit is
    /// never split. Where another connection wrote before, it notes a
    /// commit's end in the token (`cutForNewConnection`). A Sluice writer
    /// seals it, cut there and where observations saw a commit end
    /// (`ChangeLog.sealForeignTransaction`). A temporary trigger groups by
    /// `sluice_txn()`, its connection's transaction.
    static func sql(for table: TableInfo, temporary: Bool) -> [String] {
        let quotedTable = quoteIdentifier(table.name)
        let tableLiteral = literal(table.name)
        let token = temporary ? "sluice_txn()" : literal(ChangeLog.foreignToken)
        let joins = temporary ? "token = \(token)" : "token LIKE \(literal(ChangeLog.foreignToken + "%"))"
        let guardCondition = temporary ? nil : "(SELECT active FROM sluice_foreign) IS 1"
        let openTransaction = (temporary ? "" : cutForNewConnection + "\n") + """
            INSERT INTO sluice_transaction (at, author, token, first_change)
                SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), NULL, \(token), \(ChangeLog.nextChangeID)
                WHERE NOT EXISTS (SELECT 1 FROM sluice_transaction WHERE seq = (SELECT max(seq) FROM sluice_transaction) AND \(joins));
            """
        let seq = "(SELECT max(seq) FROM sluice_transaction)"
        let columns = loggedColumns(table)

        func key(_ row: String) -> String { keyExpression(table, row: row) }
        func object(_ row: String) -> String { objectExpression(table, row: row, native: temporary) }
        let differs = columns.map { "\(LogValues.sqlExpression("OLD.\(quoteIdentifier($0))")) IS NOT \(LogValues.sqlExpression("NEW.\(quoteIdentifier($0))"))" }
            + ["OLD.rowid IS NOT NEW.rowid"]
        let changedPairs = columns.map {
            "SELECT \(literal($0)) AS k, \(LogValues.sqlExpression("OLD.\(quoteIdentifier($0))")) AS o, \(LogValues.sqlExpression("NEW.\(quoteIdentifier($0))")) AS n"
        }.joined(separator: " UNION ALL ")

        func trigger(_ operation: String, when extra: String?, body: String) -> String {
            let conditions = [guardCondition, extra].compactMap { $0 }
            let when = conditions.isEmpty ? "" : " WHEN " + conditions.map { "(\($0))" }.joined(separator: " AND ")
            let target = temporary ? "main.\(quotedTable)" : quotedTable
            return "CREATE \(temporary ? "TEMP " : "")TRIGGER IF NOT EXISTS \(quoteIdentifier(name(table: table.name, operation: operation, temporary: temporary))) AFTER \(operation.uppercased()) ON \(target)\(when) BEGIN\n"
                + openTransaction + "\n" + body + "\nEND"
        }
        // A temporary trigger's connection has recursive_triggers on, so the
        // rows REPLACE deletes fire the delete trigger. A foreign writer's
        // may not: its BEFORE triggers keep the rows the change may replace
        // (`sluice_replaced`), and the AFTER trigger logs those that are gone
        // as deletes, then clears them (the delete trigger takes out those it
        // logged itself).
        let replaced = temporary ? "" : """
            INSERT INTO sluice_change (seq, tbl, op, row_id, old_row_id, key, old, new)
                SELECT \(seq), \(tableLiteral), 'delete', c.row_id, NULL, c.key, c.old, NULL FROM sluice_replaced AS c
                WHERE c.tbl = \(tableLiteral) AND (c.row_id = NEW.rowid OR NOT EXISTS (SELECT 1 FROM \(quotedTable) WHERE rowid = c.row_id))
                ORDER BY c.id;
            DELETE FROM sluice_replaced WHERE tbl = \(tableLiteral);

            """
        let forgetReplaced = temporary ? "" : "\nDELETE FROM sluice_replaced WHERE tbl = \(tableLiteral) AND row_id = OLD.rowid;"
        let pendingReplaced = "EXISTS (SELECT 1 FROM sluice_replaced WHERE tbl = \(tableLiteral))"
        var triggers = [
            trigger("insert", when: nil, body: replaced + """
                INSERT INTO sluice_change (seq, tbl, op, row_id, old_row_id, key, old, new)
                    VALUES (\(seq), \(tableLiteral), 'insert', NEW.rowid, NULL, \(key("NEW")), NULL, \(object("NEW")));
                """),
            trigger("update", when: (differs + (temporary ? [] : [pendingReplaced])).joined(separator: " OR "), body: replaced + """
                INSERT INTO sluice_change (seq, tbl, op, row_id, old_row_id, key, old, new)
                    SELECT \(seq), \(tableLiteral), 'update', NEW.rowid, nullif(OLD.rowid, NEW.rowid), \(key("NEW")), o, n
                    FROM (SELECT json_group_object(k, json(o)) AS o, json_group_object(k, json(n)) AS n, count(*) AS changed
                          FROM (\(changedPairs)) WHERE o IS NOT n)
                    WHERE changed > 0 OR OLD.rowid IS NOT NEW.rowid;
                """),
            trigger("delete", when: nil, body: """
                INSERT INTO sluice_change (seq, tbl, op, row_id, old_row_id, key, old, new)
                    VALUES (\(seq), \(tableLiteral), 'delete', OLD.rowid, NULL, \(key("OLD")), \(object("OLD")), NULL);
                """ + forgetReplaced),
        ]
        if !temporary {
            triggers += ["insert", "update"].map { operation in
                let others = operation == "update" ? " AND r.rowid IS NOT OLD.rowid" : ""
                return "CREATE TRIGGER IF NOT EXISTS \(quoteIdentifier(replaceTriggerName(table: table.name, operation: operation))) "
                    + "BEFORE \(operation.uppercased()) ON \(quotedTable) WHEN \(guardCondition ?? "1") BEGIN\n"
                    + "DELETE FROM sluice_replaced WHERE tbl = \(tableLiteral);\n"
                    + "INSERT INTO sluice_replaced (tbl, row_id, key, old) SELECT \(tableLiteral), r.rowid, \(key("r")), \(object("r")) "
                    + "FROM \(quotedTable) AS r WHERE (\(conflicts(table, row: "r"))) \(others) ORDER BY r.rowid;\nEND"
            }
        }
        return triggers
    }

    /// The longest a foreign transaction's token grows with notes (`cutForNewConnection`).
    static let maximumNotes = 32_768

    /// Notes in the open foreign transaction's token that a commit ended
    /// before this statement when the connection running it cannot have
    /// written the rows logged since the last such note: it has changed
    /// fewer rows (`total_changes()`, which counts the log rows its
    /// triggers inserted) than there are. A new connection (a new `sqlite3`
    /// process) starts at zero, so its first commit is told apart from the
    /// last connection's; one that has changed more rows may not be (a
    /// merge, never a split). Through one transaction the connection's
    /// count grows at least as fast as the rows since the note (each logged
    /// row is also an insert into the log), so no note falls inside it.
    ///
    /// Past `maximumNotes` characters of notes (about a thousand commits by new
    /// connections with no Sluice writer to seal them), no more are written: the commits
    /// after share a part (merged, counted, never split) and each note stays cheap.
    ///
    /// The token reads `foreign:` and the notes, newest first: `id@ms`,
    /// the change that ended a commit and when the next one began (milliseconds
    /// since 1970); `ChangeLog.sealForeignTransaction` cuts there.
    static let cutForNewConnection = """
        UPDATE sluice_transaction SET token = 'foreign:' || (SELECT coalesce(max(id), 0) FROM sluice_change)
                || '@' || CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) || ' ' || substr(token, 9)
            WHERE seq = (SELECT max(seq) FROM sluice_transaction) AND token LIKE 'foreign:%' AND length(token) < \(maximumNotes)
            AND total_changes() < (SELECT coalesce(max(id), 0) FROM sluice_change) - max(first_change - 1, CAST(substr(token, 9) AS INTEGER));
        """

    /// A foreign writer's triggers of `table` by name, with their SQL.
    static func named(for table: TableInfo) -> [(name: String, sql: String)] {
        let names = operations.map { name(table: table.name, operation: $0, temporary: false) }
            + ["insert", "update"].map { replaceTriggerName(table: table.name, operation: $0) }
        return Array(zip(names, sql(for: table, temporary: false)))
    }

    /// The name of a foreign writer's BEFORE trigger that keeps the rows an
    /// INSERT or UPDATE (`operation`) may replace.
    static func replaceTriggerName(table: String, operation: String) -> String {
        ChangeLog.replaceTriggerPrefix + table + "_" + operation
    }

    /// SQL true for a row (`row`, a table alias) that the row `NEW` would
    /// replace under `OR REPLACE`: the same rowid, or the same key in a
    /// unique index (compared with the index's collation; NULLs never
    /// conflict). An index on expressions compares each expression of `row`
    /// with the same expression over `NEW`'s stored columns; one whose
    /// expression could not be read from its SQL is skipped, and the rows
    /// replaced through it are logged only when the writer has
    /// `recursive_triggers` on. Rows found here that the change does not
    /// delete are not logged (the AFTER trigger logs those that are gone).
    static func conflicts(_ table: TableInfo, row: String) -> String {
        var conditions = ["\(row).rowid = NEW.rowid"]
        let stored = loggedColumns(table).map { "NEW.\(quoteIdentifier($0)) AS \(quoteIdentifier($0))" }.joined(separator: ", ")
        for index in table.uniqueIndexes {
            if index.parts.allSatisfy({ $0.column != nil }) {
                conditions.append("(" + index.parts.compactMap { part in part.column.map { column in
                    "\(row).\(quoteIdentifier(column)) = NEW.\(quoteIdentifier(column)) COLLATE \(quoteIdentifier(part.collation))"
                } }.joined(separator: " AND ") + ")")
                continue
            }
            // An expression: evaluated on `row` (the only table in the outer
            // FROM) and, in a subquery, on NEW's values named as columns.
            var terms: [String] = []
            for part in index.parts {
                guard let term = part.column.map(quoteIdentifier) ?? part.expression.map({ "(\($0))" }) else { terms = []; break }
                terms.append("\(term) COLLATE \(quoteIdentifier(part.collation))")
            }
            guard !terms.isEmpty, !stored.isEmpty else { continue }
            let list = terms.joined(separator: ", ")
            conditions.append("\(row).rowid IN (SELECT rowid FROM \(quoteIdentifier(table.name)) WHERE (\(list)) = (SELECT \(list) FROM (SELECT \(stored))))")
        }
        return conditions.joined(separator: " OR ")
    }

    /// The columns the log records: all but generated ones (derived, not logged).
    static func loggedColumns(_ table: TableInfo) -> [String] {
        table.columns.filter { !$0.isGenerated }.map(\.name)
    }

    /// SQL for the logged key of `row` (a table alias, `NEW` or `OLD`):
    /// the rowid, the primary key's value, or a JSON array of a composite key's.
    static func keyExpression(_ table: TableInfo, row: String) -> String {
        if table.primaryKey == ["rowid"] || table.hasIntegerPrimaryKey || table.primaryKey.isEmpty { return "\(row).rowid" }
        if table.primaryKey.count == 1 { return "\(row).\(quoteIdentifier(table.primaryKey[0]))" }
        return "json_array(" + table.primaryKey.map { "json(\(LogValues.sqlExpression("\(row).\(quoteIdentifier($0))")))" }.joined(separator: ", ") + ")"
    }

    /// SQL for the logged JSON object of every logged column of `row`:
    /// with `sluice_log_object` on Sluice's own connections (`native`),
    /// with SQLite's JSON functions in triggers other writers run.
    static func objectExpression(_ table: TableInfo, row: String, native: Bool = false) -> String {
        if native {
            let columns = loggedColumns(table)
            let fragments = LogValues.objectFragments(names: columns).map(literal)
            let values = columns.map { "\(row).\(quoteIdentifier($0))" }
            return LogValues.objectFunction + "(" + zip(fragments, values).map { "\($0), \($1)" }.joined(separator: ", ")
                + (fragments.last.map { (values.isEmpty ? "" : ", ") + $0 } ?? "") + ")"
        }
        return "json_object(" + loggedColumns(table).map { "\(literal($0)), json(\(LogValues.sqlExpression("\(row).\(quoteIdentifier($0))")))" }.joined(separator: ", ") + ")"
    }

    /// An SQL string literal.
    static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }
}
