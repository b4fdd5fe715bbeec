import ArgumentParser
import Foundation
import Sluice

/// The options every command shares: which database file.
struct StoreOptions: ParsableArguments {
    /// The `--db` option: the database file.
    @Option(name: .long, help: ArgumentHelp("The database file.", discussion: "Default: $SLUICE_DB, or ./sluice.sqlite.", valueName: "path"))
    var db: String?

    /// The database path: --db, then $SLUICE_DB, then ./sluice.sqlite.
    var path: String {
        if let db, !db.isEmpty { return db }
        if let environment = ProcessInfo.processInfo.environment["SLUICE_DB"], !environment.isEmpty { return environment }
        return "sluice.sqlite"
    }

    /// Opens an existing database, never creating one; read-only opens
    /// never write to it either.
    func openExisting(readOnly: Bool = false) throws -> Store {
        guard FileManager.default.fileExists(atPath: path) else {
            throw StoreError(code: .cannotOpen, message: "no database at \(path) (create one with `sluice migrate` or `sluice tour`, or pass --db PATH)")
        }
        var configuration = Store.Configuration()
        configuration.createIfMissing = false
        configuration.readOnly = readOnly
        configuration.author = "cli"
        return try Store(path: path, configuration: configuration)
    }

    /// Opens the database, creating it if needed.
    func openOrCreate() throws -> Store {
        var configuration = Store.Configuration()
        configuration.author = "cli"
        return try Store(path: path, configuration: configuration)
    }
}

/// Whether a stream is a terminal (for progress bars and colour).
enum Terminal {
    /// Whether standard output is a terminal.
    static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) != 0 }
    /// Whether standard error is a terminal.
    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) != 0 }

    /// Writes to standard error.
    static func printError(_ text: String, terminator: String = "\n") {
        FileHandle.standardError.write(Data((text + terminator).utf8))
    }
}

/// A one-line progress bar on standard error, drawn only on a terminal.
struct ProgressBar {
    /// The last percentage shown (a line is drawn only when it changes).
    private var lastPercent = -1
    /// Whether anything is drawn: only on a terminal.
    private let enabled = Terminal.stderrIsTerminal

    /// Shows the progress of `phase`: `done` of `total`.
    mutating func update(_ phase: String, _ done: Int, _ total: Int) {
        guard enabled, total > 0 else { return }
        let percent = min(100, done * 100 / total)
        guard percent != lastPercent else { return }
        lastPercent = percent
        let width = 30
        let filled = percent * width / 100
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        Terminal.printError("\r\(bar) \(String(format: "%3d", percent))% \(phase) \(done)/\(total)   ", terminator: "")
    }

    /// Ends the progress line.
    func finish() {
        guard enabled, lastPercent >= 0 else { return }
        Terminal.printError("\r\u{1B}[2K", terminator: "")
    }
}

/// Times as the CLI prints them: ISO 8601 with milliseconds, in UTC.
enum Timestamps {
    /// A date in ISO 8601 with milliseconds, in UTC.
    static func iso8601(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
