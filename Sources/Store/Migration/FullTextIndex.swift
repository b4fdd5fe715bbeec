/// A full-text index over text columns of a table: an FTS5 table named
/// `sluice_fts_<table>`, kept in step with the table by triggers that every
/// writer fires (Sluice, another connection, the `sqlite3` shell).
///
/// Declare it in a migration, after the table:
///
/// ```swift
/// let migrations = DemoSchema.migrations + [
///     .fullTextIndex(version: 10, FullTextIndex(table: "person", columns: ["first_name", "last_name", "city"]))
/// ]
/// ```
///
/// Then filter with `matching(_:)` (or `MATCH` in the query language). The
/// index holds its own copy of the indexed text (an FTS5 table with content,
/// not an external-content one): a `REPLACE` that deletes a row fires no
/// delete trigger unless `recursive_triggers` is on (the `sqlite3` shell's
/// default is off), and an external-content index can only forget a row
/// with the values it indexed. With a copy, the triggers replace a row's
/// entry by rowid whatever happened to the row: the index never matches a
/// row on text it no longer has. (A row a `REPLACE` deleted under another
/// unique key may stay in the index, unmatched by any row, until its rowid
/// is used again or `rebuildFullTextIndex(on:)` runs; it only weighs on
/// ranking.)
///
/// Sluice's change log, history and sync leave `sluice_*` tables out: the
/// index is never logged or synced; each device builds its own from the rows.
///
/// Related SQLite documentation: <https://www.sqlite.org/fts5.html>
public struct FullTextIndex: Sendable, Hashable {
    /// How text is split into tokens and compared.
    public enum Tokenizer: Sendable, Hashable {
        /// Words by Unicode 6.1 rules, case-folded; with `removeDiacritics`,
        /// `é` matches `e` (FTS5's `unicode61 remove_diacritics 2`).
        case unicode61(removeDiacritics: Bool = true)
        /// `unicode61`, then English stemming: `running` matches `run`.
        case porter(removeDiacritics: Bool = true)
        /// Every run of three characters: substring search in any script
        /// (CJK text has no spaces between words); a query term needs three
        /// characters or more.
        case trigram(caseSensitive: Bool = false)

        /// The `tokenize` option of the FTS5 table.
        var sql: String {
            switch self {
            case .unicode61(let removeDiacritics): "unicode61 remove_diacritics \(removeDiacritics ? 2 : 0)"
            case .porter(let removeDiacritics): "porter unicode61 remove_diacritics \(removeDiacritics ? 2 : 0)"
            case .trigram(let caseSensitive): "trigram case_sensitive \(caseSensitive ? 1 : 0)"
            }
        }
    }

    /// The indexed table.
    public let table: String
    /// The indexed columns, in order (a column weight in ranking follows this order).
    public let columns: [String]
    /// How text is tokenized.
    public let tokenizer: Tokenizer

    /// A full-text index.
    ///
    /// - Parameters:
    ///   - table: the table to index (a table with a rowid).
    ///   - columns: its text columns to index, at least one.
    ///   - tokenizer: how text is split and compared; words with diacritics
    ///     removed by default.
    public init(table: String, columns: [String], tokenizer: Tokenizer = .unicode61()) {
        self.table = table
        self.columns = columns
        self.tokenizer = tokenizer
    }

    /// The FTS5 table's name: `sluice_fts_<table>`.
    public var indexTable: String { FullTextNaming.indexTable(for: table) }

    /// The prefix of the index's trigger names.
    private var triggerPrefix: String { FullTextNaming.triggerPrefix(for: table) }

    /// The SQL that creates the index and its triggers, and fills it with the
    /// table's rows.
    public var createSQL: String {
        let fts = quoteIdentifier(indexTable)
        let source = quoteIdentifier(table)
        let names = columns.map(quoteIdentifier).joined(separator: ", ")
        let new = columns.map { "new." + quoteIdentifier($0) }.joined(separator: ", ")
        let changed = (["new.rowid IS NOT old.rowid"] + columns.map { "new.\(quoteIdentifier($0)) IS NOT old.\(quoteIdentifier($0))" })
            .joined(separator: " OR ")
        return """
            -- A full-text index over \(table) (\(columns.joined(separator: ", "))), kept in step by triggers.
            CREATE VIRTUAL TABLE \(fts) USING fts5(\(names), tokenize = '\(tokenizer.sql)');
            CREATE TRIGGER \(quoteIdentifier(triggerPrefix + "insert")) AFTER INSERT ON \(source) BEGIN
                INSERT OR REPLACE INTO \(fts) (rowid, \(names)) VALUES (new.rowid, \(new));
            END;
            CREATE TRIGGER \(quoteIdentifier(triggerPrefix + "delete")) AFTER DELETE ON \(source) BEGIN
                DELETE FROM \(fts) WHERE rowid = old.rowid;
            END;
            CREATE TRIGGER \(quoteIdentifier(triggerPrefix + "update")) AFTER UPDATE ON \(source) WHEN \(changed) BEGIN
                DELETE FROM \(fts) WHERE rowid = old.rowid;
                INSERT OR REPLACE INTO \(fts) (rowid, \(names)) VALUES (new.rowid, \(new));
            END;
            INSERT INTO \(fts) (rowid, \(names)) SELECT rowid, \(names) FROM \(source);

            """
    }

    /// The SQL that drops the index and its triggers.
    public var dropSQL: String {
        """
        DROP TRIGGER IF EXISTS \(quoteIdentifier(triggerPrefix + "insert"));
        DROP TRIGGER IF EXISTS \(quoteIdentifier(triggerPrefix + "delete"));
        DROP TRIGGER IF EXISTS \(quoteIdentifier(triggerPrefix + "update"));
        DROP TABLE IF EXISTS \(quoteIdentifier(indexTable));
        """
    }
}

extension Migration {
    /// A migration that creates a full-text index (its FTS5 table, the
    /// triggers that keep it in step, and its first contents).
    ///
    /// - Parameters:
    ///   - version: the migration's number.
    ///   - index: the index to create.
    /// - Returns: the migration, named `full_text_<table>`.
    public static func fullTextIndex(version: Int, _ index: FullTextIndex) -> Migration {
        Migration(version: version, name: "full_text_" + index.table, sql: index.createSQL)
    }
}

