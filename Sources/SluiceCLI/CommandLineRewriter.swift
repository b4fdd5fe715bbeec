import ArgumentParser

/// Rewrites the command line before ArgumentParser reads it, for the ways
/// people type it:
/// - `sluice --db mine.sqlite query person`: options that every command (or
///   the command) takes may come before the command's name, as `git -C`,
///   `sqlite3 FILE` and `kubectl --kubeconfig` have taught; they move after it.
/// - `--limit -1`: a negative number after an option is that option's value
///   (ArgumentParser would take it for an option and say the value is
///   missing), so the command can say what is wrong with it.
enum CommandLineRewriter {
    /// Options that may come before the command, and the commands that take
    /// them (nil: every command).
    static let leadingOptions: [String: Set<String>?] = [
        "--db": nil,
        "--format": ["query", "watch", "history"],
    ]

    /// The arguments with a leading option moved after its command, and a
    /// negative number joined to the option before it.
    ///
    /// - Parameter arguments: the arguments after the program's name.
    /// - Returns: the arguments for the parser.
    /// - Throws: `ValidationError` for a leading option the command does not take.
    static func rewrite(_ arguments: [String]) throws -> [String] {
        var arguments = joinNegativeValues(arguments)
        var moved: [String] = []
        var index = 0
        while index < arguments.count, arguments[index].hasPrefix("--") {
            let name = String(arguments[index].prefix { $0 != "=" })
            guard leadingOptions.keys.contains(name) else { break }
            if arguments[index].contains("=") {
                moved.append(arguments[index])
                index += 1
            } else {
                guard index + 1 < arguments.count else { throw ValidationError("\(name) needs a value, as in: sluice \(name) \(name == "--db" ? "mine.sqlite" : "json") query person") }
                moved += [arguments[index], arguments[index + 1]]
                index += 2
            }
        }
        guard !moved.isEmpty else { return arguments }
        guard index < arguments.count, !arguments[index].hasPrefix("-") else {
            throw ValidationError("\(moved[0].prefix { $0 != "=" }) goes with a command, as in: sluice \(moved.joined(separator: " ")) query person")
        }
        let command = arguments[index]
        for option in moved where option.hasPrefix("--") {
            let name = String(option.prefix { $0 != "=" })
            if let commands = leadingOptions[name] ?? nil, !commands.contains(command) {
                throw ValidationError("\(name) does not apply to `sluice \(command)` (it applies to \(commands.sorted().joined(separator: ", ")))")
            }
        }
        arguments.removeSubrange(0..<index)
        arguments.insert(contentsOf: moved, at: 1)
        return arguments
    }

    /// `--limit -1` → `--limit=-1`.
    static func joinNegativeValues(_ arguments: [String]) -> [String] {
        var result: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument.hasPrefix("--"), !argument.contains("="), index + 1 < arguments.count, isNegativeNumber(arguments[index + 1]) {
                result.append(argument + "=" + arguments[index + 1])
                index += 2
            } else {
                result.append(argument)
                index += 1
            }
        }
        return result
    }

    /// Whether an argument is a negative number (`-5`, `-1.5`), not an option.
    private static func isNegativeNumber(_ text: String) -> Bool {
        text.count > 1 && text.hasPrefix("-") && Double(text) != nil
    }
}
