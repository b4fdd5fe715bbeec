import ArgumentParser
import SluiceSync

/// `sluice-sync compact`: prunes a space's history (run it from cron, or a scheduled job).
struct CompactCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compact",
        abstract: "Prunes a space's history up to what every device seen within the horizon has pulled.",
        discussion: """
            New devices start from a snapshot of the rows, so they need none of it. A device away longer than the \
            horizon finds its history gone (410 compacted) and starts again from a snapshot, keeping its unpushed edits.
            """)

    @OptionGroup var database: DatabaseOptions

    @Option(help: "The space to compact.")
    var space: String

    @Option(help: ArgumentHelp("How long a device may stay away and still pull the history it needs.", valueName: "days"))
    var horizonDays: Double = 30

    func validate() throws {
        guard !space.isEmpty, space.utf8.count <= 100 else { throw ValidationError("--space: 1 to 100 bytes") }
        guard horizonDays >= 0, horizonDays <= 3_650 else { throw ValidationError("--horizon-days: 0 to 3650, not \(horizonDays)") }
    }

    func run() async throws {
        let (space, horizon) = (space, Duration.seconds(horizonDays * 86_400))
        let done = try await database.withStorage { storage in try await storage.compact(space: space, horizon: horizon) }
        print("space '\(space)': history pruned through \(done.prunedThrough); \(done.deleted) transaction(s) and \(done.attachmentsDeleted) attachment(s) deleted")
    }
}
