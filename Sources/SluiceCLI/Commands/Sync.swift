import ArgumentParser
import Foundation
import SluiceDemo
import SluiceSyncClient
import Sluice

/// `sluice sync`: pushes and pulls the demo tables through a sync service, once or following.
struct Sync: AsyncParsableCommand {
    /// The command's name, abstract and discussion, as `--help` shows them.
    static let configuration = CommandConfiguration(
        abstract: "Sync the store with a sluice-sync service: push local changes, pull other devices' changes.",
        discussion: """
            Syncs the demo's tables (\(DemoSchema.syncedTables.joined(separator: ", "))). A database that does not exist yet \
            is created with the demo schema (a new device that pulls everything). The token comes from --token or \
            $SLUICE_SYNC_TOKEN (`sluice-sync token add` prints one), the service from --server or $SLUICE_SYNC_SERVER. \
            `sluice sync status` prints what is pending without contacting the service; `sluice sync quarantine` \
            lists, retries or discards pulled transactions this store could not apply; `sluice sync conflicts` lists what \
            sync decided against (the conflict inbox), and restores or dismisses a record.

            Options of `sluice sync` itself (the `now` subcommand, the default):
              --db <path>       the store (default ./sluice.sqlite, or $SLUICE_DB)
              --server <url>    the sync service (default $SLUICE_SYNC_SERVER)
              --token <token>   this device's bearer token (default $SLUICE_SYNC_TOKEN)
              --follow          keep syncing after every local commit and whenever the service has something new
              --table <table> [--subscribe <query>]
                                sync only these rows (partial sync; repeat both, in pairs; no query: the whole table)
              --attachments <table.column> [--lazy]
                                blobs of this column travel as attachments (fetched in every sync, or when asked)
              --schema-version <n>
                                the registered schema version this store's tables are
            """,
        subcommands: [SyncNow.self, SyncStatusCommand.self, SyncQuarantine.self, SyncConflicts.self],
        defaultSubcommand: SyncNow.self)
}

/// `sluice sync [--follow]`.
struct SyncNow: AsyncParsableCommand {
    /// The command's name, abstract and discussion, as `--help` shows them.
    static let configuration = CommandConfiguration(
        commandName: "now",
        abstract: "Push and pull once (the default), or keep following with --follow.")

    /// Where the store is and how to open it.
    @OptionGroup var options: StoreOptions

    /// The `--server` option: the sync service.
    @Option(help: ArgumentHelp("The sync service.", discussion: "Default: $SLUICE_SYNC_SERVER.", valueName: "url"))
    var server: String?

    /// The `--token` option: the bearer token of this device's space.
    @Option(help: ArgumentHelp("The bearer token of this device's space.", discussion: "Default: $SLUICE_SYNC_TOKEN.", valueName: "token"))
    var token: String?

    /// The `--follow` flag: keep syncing: after every local commit and whenever the service has something new, until interrupted.
    @Flag(help: "Keep syncing: after every local commit and whenever the service has something new, until interrupted.")
    var follow = false

    /// What the device syncs beyond the defaults: subscriptions, attachments, its schema version.
    @OptionGroup var features: SyncFeatureOptions

    /// Runs the command.
    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        guard let text = server ?? environment["SLUICE_SYNC_SERVER"], !text.isEmpty else {
            throw ValidationError("--server URL is missing (or set SLUICE_SYNC_SERVER), as in: sluice sync --server http://127.0.0.1:8080 --token slt_...")
        }
        let url = try SyncStores.serviceURL(text, option: "--server")
        guard let token = token ?? environment["SLUICE_SYNC_TOKEN"], !token.isEmpty else {
            throw ValidationError("--token is missing (or set SLUICE_SYNC_TOKEN); `sluice-sync token add --space NAME` prints one")
        }
        let configuration = try features.configuration(SyncStores.configuration)
        let created = !FileManager.default.fileExists(atPath: options.path)
        let store = try SyncStores.open(options)
        let client = try SyncClient(store: store, server: url, token: token, configuration: configuration)
        guard follow else {
            do {
                let report = try await client.sync()
                let rows = report.rows > 0 ? " and \(report.rows) row\(report.rows == 1 ? "" : "s") as current values" : ""
                print("synced \(options.path): pushed \(report.pushed), pulled \(report.pulled) transaction\(report.pulled == 1 ? "" : "s")\(rows); cursor \(report.cursor)")
            } catch let error as SyncClientError {
                // A database this command created for nothing is not left behind.
                if created, try SyncClient.savedState(of: store, configuration: configuration)?.lastSync == nil {
                    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: options.path + suffix) }
                }
                throw SyncStores.failure(error, server: text)
            }
            return
        }
        let printer = Task {
            // A line when the status, the pending count or the cursor changes.
            var last: (SyncClient.Status, Int, Int64)?
            for await snapshot in client.updates where snapshot.status != .syncing {
                let now = (snapshot.status, snapshot.pendingChangeCount, snapshot.cursor)
                if let last, last == now { continue }
                last = now
                let at = snapshot.lastSync.map { SyncStores.format($0) } ?? "never"
                let line = "\(SyncStores.describe(snapshot.status)) · pending \(snapshot.pendingChangeCount) · cursor \(snapshot.cursor) · last sync \(at)\n"
                FileHandle.standardOutput.write(Data(line.utf8))
            }
        }
        defer { printer.cancel() }
        do {
            try await client.follow()
        } catch let error as SyncClientError {
            throw SyncStores.failure(error, server: text)
        }
    }
}

/// `sluice sync status`.
struct SyncStatusCommand: ParsableCommand {
    /// The command's name, abstract and discussion, as `--help` shows them.
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print this store's sync state: device, pending changes, last sync, cursor (without contacting the service).")

    /// Where the store is and how to open it.
    @OptionGroup var options: StoreOptions

    /// Runs the command.
    func run() throws {
        let store = try options.openExisting(readOnly: true)
        guard let state = try SyncClient.savedState(of: store, configuration: SyncStores.configuration) else {
            print("\(options.path) has never been synced (sluice sync --server URL --token TOKEN)")
            return
        }
        print("device \(state.deviceID)")
        print("pending \(state.pendingChangeCount) transaction\(state.pendingChangeCount == 1 ? "" : "s")")
        print("last sync \(state.lastSync.map(SyncStores.format) ?? "never")")
        print("cursor \(state.cursor)")
        print("quarantined \(state.quarantinedCount) transaction\(state.quarantinedCount == 1 ? "" : "s")\(state.quarantinedCount == 0 ? "" : " (sluice sync quarantine)")")
    }
}

/// `sluice sync quarantine [--retry | --discard]`.
struct SyncQuarantine: ParsableCommand {
    /// The command's name, abstract and discussion, as `--help` shows them.
    static let configuration = CommandConfiguration(
        commandName: "quarantine",
        abstract: "List the pulled transactions this store could not apply (a value its schema refuses, a column it does not have); retry or discard them.",
        discussion: """
            Other transactions are applied past them. --retry applies each again (after a migration that accepts it, say); \
            those that fail again stay. --discard drops them: the store keeps its rows without them.
            """)

    /// Where the store is and how to open it.
    @OptionGroup var options: StoreOptions

    /// The `--retry` flag: apply each quarantined transaction again.
    @Flag(help: "Apply each quarantined transaction again.")
    var retry = false

    /// The `--discard` flag: drop every quarantined transaction.
    @Flag(help: "Drop every quarantined transaction.")
    var discard = false

    /// Checks the options' values before anything is opened (a bad one exits
    /// with a usage error and changes nothing).
    func validate() throws {
        guard !(retry && discard) else { throw ValidationError("--retry and --discard: choose one") }
    }

    /// Runs the command.
    func run() throws {
        let store = try options.openExisting(readOnly: !(retry || discard))
        let configuration = SyncStores.configuration
        guard try SyncClient.savedState(of: store, configuration: configuration) != nil else {
            print("\(options.path) has never been synced (sluice sync --server URL --token TOKEN)")
            return
        }
        if discard {
            let count = try SyncClient.discardQuarantined(in: store, configuration: configuration)
            print("discarded \(count) transaction\(count == 1 ? "" : "s")")
            return
        }
        let before = try SyncClient.quarantined(in: store, configuration: configuration).count
        let remaining = retry ? try SyncClient.retryQuarantined(in: store, configuration: configuration)
            : try SyncClient.quarantined(in: store, configuration: configuration)
        if retry { print("applied \(before - remaining.count) of \(before)") }
        for item in remaining {
            let tables = Set(item.transaction.changes.map(\.table)).sorted().joined(separator: ", ")
            print("seq \(item.transaction.seq ?? 0) from \(item.transaction.device) (\(item.transaction.changes.count) change\(item.transaction.changes.count == 1 ? "" : "s") to \(tables)): \(item.error)")
        }
        if remaining.isEmpty { print("quarantined 0 transactions") }
    }
}

/// What the sync commands share: the synced tables, the service's URL and the store.
enum SyncStores {
    /// What the CLI syncs: the demo's tables.
    static var configuration: SyncConfiguration { SyncConfiguration(tables: DemoSchema.syncedTables) }

    /// The sync service's URL from an option's value: http or https, with a host.
    static func serviceURL(_ text: String, option: String) throws -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme), url.host != nil else {
            throw ValidationError("\(option) '\(text)' is not an http:// or https:// URL")
        }
        return url
    }

    /// The store to sync: an existing one as it is, or a new one with the demo schema.
    ///
    /// A database this command began to create and never finished (the run was killed
    /// between the demo's migrations, each its own transaction, or before the first) is
    /// finished: one with some of the demo's migrations and nothing else, or with no
    /// tables but the store's own. Any other database is left as it is.
    static func open(_ options: StoreOptions) throws -> Store {
        guard FileManager.default.fileExists(atPath: options.path) else {
            let store = try options.openOrCreate()
            try store.migrate(DemoSchema.migrations)
            return store
        }
        let store = try options.openExisting()
        if try isUnfinishedDemo(store) { try store.migrate(DemoSchema.migrations) }
        return store
    }

    /// Whether `store` is a demo database whose creation stopped part-way.
    static func isUnfinishedDemo(_ store: Store) throws -> Bool {
        let applied = try store.appliedMigrations()
        let demo = DemoSchema.migrations.sorted { $0.version < $1.version }
        guard applied.count < demo.count else { return false }
        if !applied.isEmpty {
            // The first versions of the demo's own migrations, by name: `migrate` checks the rest.
            return zip(applied, demo).allSatisfy { $0.version == $1.version && $0.name == $1.name }
        }
        let tables = try store.read { db in try db.tableNames() }    // the app's tables and views
        return tables.isEmpty
    }

    /// A failed sync, as the command reports it (exit status 1, no usage text).
    struct Failure: Error, CustomStringConvertible {
        /// The sentence printed.
        let description: String
    }

    /// The failure the command reports for a sync error, naming the service.
    static func failure(_ error: SyncClientError, server: String) -> Error {
        switch error {
        case .offline(let reason): Failure(description: "cannot reach the sync service at \(server): \(reason) (local changes stay pending)")
        case .unauthorized(let message): Failure(description: "the service at \(server) refused the token: \(message)")
        default: Failure(description: "sync with \(server) failed: \(error)")
        }
    }

    /// The client's status, in a few words.
    static func describe(_ status: SyncClient.Status) -> String {
        switch status {
        case .idle: "synced"
        case .syncing: "syncing"
        case .offline(let reason): "offline (\(reason))"
        case .error(let message): "error (\(message))"
        }
    }

    /// A date as the sync commands print it.
    static func format(_ date: Date) -> String { Timestamps.iso8601(date) }
}
