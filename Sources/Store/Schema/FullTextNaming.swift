/// Where a table's full-text index lives: the FTS5 table `sluice_fts_<table>`
/// (a `sluice_` name, so the change log, history and sync leave it and its
/// shadow tables out).
enum FullTextNaming {
    /// The FTS5 table of `table`'s full-text index.
    static func indexTable(for table: String) -> String { "sluice_fts_" + table }

    /// The prefix of the index's trigger names.
    static func triggerPrefix(for table: String) -> String { "sluice_fts_" + table + "_" }
}
