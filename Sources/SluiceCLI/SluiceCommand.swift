import ArgumentParser
import Sluice

/// `sluice`: seed, query and migrate a Sluice database from the shell.
struct SluiceCommand: AsyncParsableCommand {
    /// The command's name, abstract and discussion, as `--help` shows them.
    static let configuration = CommandConfiguration(
        commandName: "sluice",
        abstract: "Seed, query, watch and migrate a Sluice store (a plain SQLite file), or try its view models in a terminal demo.",
        discussion: """
            The database is ./sluice.sqlite unless --db PATH or the SLUICE_DB environment variable says otherwise. \
            The demo schema (person, package, package_content, message, app_state) is built in.
            """,
        version: "sluice \(SluiceCommand.version) (SQLite \(Store.sqliteVersion))",
        subcommands: [Tour.self, Migrate.self, Seed.self, Query.self, Watch.self, History.self, Track.self, Untrack.self, Sync.self, Demo.self]
    )

    /// This release of Sluice.
    static let version = "0.7.0"

    /// Reads the command line as people type it (see `CommandLineRewriter`), then runs the command.
    static func runCommandLine() async {
        let arguments: [String]
        do {
            arguments = try CommandLineRewriter.rewrite(Array(CommandLine.arguments.dropFirst()))
        } catch {
            exit(withError: error)
        }
        await main(arguments)
    }
}

/// The `sluice` command line as a library: the executable calls ``SluiceCommandLine/main()``,
/// and the CLI tests import this module instead of the executable's.
public enum SluiceCommandLine {
    /// Parses `CommandLine.arguments` and runs the command, exiting with its status.
    public static func main() async {
        await SluiceCommand.runCommandLine()
    }
}
