import ArgumentParser
import SluiceSyncClient
import SluiceSyncProtocol

/// The options of `sluice sync` that turn on sync's features: partial sync
/// (`--table` with `--subscribe`), attachments (`--attachments`, `--lazy`) and
/// schema versions (`--schema-version`).
struct SyncFeatureOptions: ParsableArguments {
    /// The `--table` option: a table to subscribe to (repeatable).
    @Option(name: .customLong("table"), help: ArgumentHelp("Sync only this table's rows a subscription keeps (partial sync); repeat for several.", valueName: "table"))
    var tables: [String] = []

    /// The `--subscribe` option: the query of the `--table` at the same position.
    @Option(name: .customLong("subscribe"), help: ArgumentHelp("The query that keeps the rows of the --table at the same position (the query language; none: the whole table).", valueName: "query"))
    var queries: [String] = []

    /// The `--attachments` option: a blob column that travels as attachments.
    @Option(name: .customLong("attachments"), help: ArgumentHelp("A blob column whose values travel as attachments (repeat for several).", valueName: "table.column"))
    var attachments: [String] = []

    /// The `--lazy` flag: attachments are fetched when asked, not in every sync.
    @Flag(help: "With --attachments: fetch attachments' bytes when asked, not in every sync.")
    var lazy = false

    /// The `--schema-version` option.
    @Option(help: ArgumentHelp("The registered schema version this store's tables are (the service speaks to it in its names).", valueName: "n"))
    var schemaVersion: Int?

    /// `base` with these options applied.
    ///
    /// - Throws: `ValidationError` naming the option that is wrong.
    func configuration(_ base: SyncConfiguration) throws -> SyncConfiguration {
        var configuration = base
        if !queries.isEmpty || !tables.isEmpty {
            guard queries.count <= tables.count else {
                throw ValidationError("--subscribe: \(queries.count) queries for \(tables.count) --table option\(tables.count == 1 ? "" : "s"); name each query's table with --table before it")
            }
            var subscriptions: [SyncSubscription] = []
            for (index, table) in tables.enumerated() {
                guard configuration.tables.contains(where: { $0.lowercased() == table.lowercased() }) else {
                    throw ValidationError("--table: '\(table)' is not a synced table (\(configuration.tables.joined(separator: ", ")))")
                }
                let query = index < queries.count ? queries[index].trimmingCharacters(in: .whitespaces) : ""
                subscriptions.append(SyncSubscription(table: table, filter: query.isEmpty ? nil : query))
            }
            configuration.subscriptions = subscriptions
        }
        for attachment in attachments {
            let parts = attachment.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw ValidationError("--attachments: '\(attachment)' is not table.column")
            }
        }
        if lazy, attachments.isEmpty { throw ValidationError("--lazy: name the attachment columns with --attachments") }
        configuration.attachments = attachments
        if lazy { configuration.attachmentFetch = .lazy }
        if let schemaVersion {
            guard schemaVersion > 0 else { throw ValidationError("--schema-version: \(schemaVersion) is not a version (1 or more)") }
            configuration.schemaVersion = schemaVersion
        }
        return configuration
    }
}
