import Foundation

/// Runs SQL through the sqlite3 command-line shell: another process.
public enum SQLiteShell {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public static var executable: String? {
        ["/usr/bin/sqlite3", "/usr/local/bin/sqlite3", "/opt/homebrew/bin/sqlite3"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    public static func run(path: String, _ sql: String) throws {
        guard let executable else { throw Failure(description: "the sqlite3 shell is not installed (apt-get install sqlite3)") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-bail", "-cmd", ".timeout 5000", path]
        let input = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        input.fileHandleForWriting.write(Data(sql.utf8))
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        guard process.terminationStatus == 0 else { throw Failure(description: "sqlite3 failed (\(process.terminationStatus)): \(message)") }
    }
}
