import ArgumentParser
import SluiceSync
import SluiceSyncProtocol

/// `sluice-sync share`: one call shares a space with a user.
struct ShareCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "share",
        abstract: "Shares a space with a user (or changes what the member may do); prints a token for the member on its last line.",
        discussion: "Roles: owner (reads, writes, shares), editor (reads and writes; with --tables, only those tables), viewer (reads only: its pushes are refused with 403 and nothing applied).")

    @OptionGroup var database: DatabaseOptions

    @Option(help: "The space to share (created when it is new).")
    var space: String

    @Option(help: "The user's name in the space: 1 to 64 letters, digits, '.', '_', '-' or '@'.")
    var user: String

    @Option(help: ArgumentHelp("What the member may do: owner, editor or viewer.", valueName: "role"))
    var role: String

    @Option(help: ArgumentHelp("For an editor, the only tables it may write, comma-separated (default: all).", valueName: "tables"))
    var tables: String?

    func validate() throws {
        guard !space.isEmpty, space.utf8.count <= 100 else { throw ValidationError("--space: 1 to 100 bytes") }
        guard ShareRequest.isValidUser(user) else { throw ValidationError("--user: 1 to 64 letters, digits, '.', '_', '-' or '@', not '\(user)'") }
        guard let role = SyncRole(rawValue: role) else {
            throw ValidationError("--role: one of \(SyncRole.allCases.map(\.rawValue).joined(separator: ", ")), not '\(role)'")
        }
        if tables != nil, role != .editor { throw ValidationError("--tables: only an editor's writes are limited to some tables") }
        if let tables, tables.split(separator: ",").isEmpty { throw ValidationError("--tables: name at least one table") }
    }

    func run() async throws {
        guard let role = SyncRole(rawValue: role) else { throw ValidationError("--role: one of owner, editor, viewer") }
        let request = ShareRequest(user: user, role: role, tables: tables.map { $0.split(separator: ",").map { String($0) } })
        let space = space
        let token = try await database.withStorage { storage in try await storage.share(space: space, request) }
        print("token for \(request.user) (\(role.rawValue)) in space '\(space)':")
        print(token)
    }
}

/// `sluice-sync member remove`.
struct MemberCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "member", abstract: "Members of a space.", subcommands: [Remove.self])

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Removes a member from a space: its tokens, its JWTs and its open long polls get 401 from then on.")

        @OptionGroup var database: DatabaseOptions

        @Option(help: "The space.")
        var space: String

        @Option(help: "The member's name.")
        var user: String

        func run() async throws {
            let (space, user) = (space, user)
            let removed = try await database.withStorage { storage in try await storage.removeMember(space: space, user: user) }
            guard let removed else { throw ValidationError("there is no space '\(space)'") }
            print(removed ? "removed \(user) from space '\(space)': its tokens and JWTs open nothing there from now on"
                          : "'\(user)' had no token in space '\(space)'; its JWTs open nothing there from now on")
        }
    }
}
