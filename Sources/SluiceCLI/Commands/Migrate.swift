import ArgumentParser
import Foundation
import Sluice
import SluiceDemo

/// `sluice migrate`: applies pending migrations and says which.
struct Migrate: ParsableCommand {
    /// The command's name, abstract and discussion, as `--help` shows them.
    static let configuration = CommandConfiguration(
        abstract: "Apply pending migrations and list them.",
        discussion: "Without --dir, applies the built-in demo schema (the SQL files of the repository's migrations/ folder).")

    /// Where the store is and how to open it.
    @OptionGroup var options: StoreOptions

    /// The `--dir` option: a folder of NNN_description.sql migrations to apply instead of the demo schema.
    @Option(help: ArgumentHelp("A folder of NNN_description.sql migrations to apply instead of the demo schema.", valueName: "folder"))
    var dir: String?

    /// Runs the command.
    func run() throws {
        let migrations = try dir.map { try Migration.load(from: URL(fileURLWithPath: $0)) } ?? DemoSchema.migrations
        let store = try options.openOrCreate()
        let applied = try store.migrate(migrations)
        if applied.isEmpty {
            print("\(options.path) is up to date (migration \(migrations.last?.identifier ?? "none")).")
        } else {
            for migration in applied { print("applied \(migration.identifier)") }
            print("\(options.path) is now at migration \(applied.last?.identifier ?? "").")
        }
    }
}
