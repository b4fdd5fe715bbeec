import ArgumentParser
import Dispatch
import Foundation
import OpenCombineShim
import Sluice
import SluiceDemo
import SluiceSyncClient
import SluiceViewModels

/// `sluice demo`: the view models in a terminal.
struct Demo: AsyncParsableCommand {
    /// The command's name, abstract and discussion, as `--help` shows them.
    static let configuration = CommandConfiguration(
        abstract: "An interactive terminal front end over the view models: people, a package editor and a chat.",
        discussion: """
            The screen redraws whenever the view models change, including when another process writes to \
            the database (try `sluice seed` or the sqlite3 shell in another terminal). Type `help` for commands. \
            With --sync-server (and --sync-token or $SLUICE_SYNC_TOKEN) the store follows a sluice-sync service: \
            run two demos on two files against one service and a change made in one appears in the other.
            """)

    /// Where the store is and how to open it.
    @OptionGroup var options: StoreOptions

    /// The `--people` option: how many people to generate when the store is empty (not when it syncs: it pulls them).
    @Option(help: "How many people to generate when the store is empty (not when it syncs: it pulls them).")
    var people = 40

    /// The `--sync-server` option: follow this sync service while the demo runs.
    @Option(help: ArgumentHelp("Follow this sync service while the demo runs.", valueName: "url"))
    var syncServer: String?

    /// The `--sync-token` option: the bearer token for --sync-server.
    @Option(help: ArgumentHelp("The bearer token for --sync-server.", discussion: "Default: $SLUICE_SYNC_TOKEN.", valueName: "token"))
    var syncToken: String?

    /// Runs the command.
    func run() async throws {
        let store = try options.openOrCreate()
        try store.migrate(DemoSchema.migrations)
        var client: SyncClient?
        if let syncServer {
            let url = try SyncStores.serviceURL(syncServer, option: "--sync-server")
            guard let token = syncToken ?? ProcessInfo.processInfo.environment["SLUICE_SYNC_TOKEN"], !token.isEmpty else {
                throw ValidationError("--sync-server needs --sync-token (or SLUICE_SYNC_TOKEN)")
            }
            client = try SyncClient(store: store, server: url, token: token, configuration: SyncStores.configuration)
        } else if try await store.read({ db in try db.fetchCount(Person.self) }) == 0 {
            _ = try Seed.generate(people: people, seed: 7, into: store)
        }
        let lines = StandardInputLines.start()
        try await runApp(store: store, path: options.path, lines: lines, client: client)
    }

    /// Runs the demo's screens on the main actor: redraws on every change and
    /// reads commands from `lines` until `quit` or the end of input.
    @MainActor
    private func runApp(store: Store, path: String, lines: AsyncStream<String>, client: SyncClient?) async throws {
        let app = try DemoApp(store: store, path: path)
        var tasks: [Task<Void, Never>] = []
        if let client {
            app.syncStatus = "sync: starting"
            app.follow(ConflictInboxModel(client: client))
            tasks.append(Task { _ = try? await client.follow() })
            tasks.append(Task { @MainActor in
                for await snapshot in client.updates {
                    app.syncStatus = "sync: \(SyncStores.describe(snapshot.status)) · pending \(snapshot.pendingChangeCount) · cursor \(snapshot.cursor)"
                    app.render()
                }
            })
        }
        defer { tasks.forEach { $0.cancel() } }
        app.render()
        for await line in lines {
            guard await app.handle(line) else { break }
        }
    }
}

/// Lines typed on standard input, read on a thread of their own.
enum StandardInputLines {
    /// Starts reading standard input, one line per element; the stream ends with the input.
    static func start() -> AsyncStream<String> {
        AsyncStream { continuation in
            let thread = Thread {
                while let line = readLine() { continuation.yield(line) }
                continuation.finish()
            }
            thread.start()
        }
    }
}

/// The demo's screens and commands, on the main actor.
@MainActor
final class DemoApp {
    /// Which screen the demo shows.
    enum Screen { case people, package, chat, conflicts }

    /// The demo's store.
    private let store: Store
    /// The store's path, shown in the header.
    private let path: String
    /// The people screen's view model.
    private let peopleModel: PeopleViewModel
    /// The package screen's view model, while it is open.
    private var packageModel: PackageViewModel?
    /// The chat screen's view model, while it is open.
    private var chatModel: ConversationViewModel?
    /// The friend the chat screen talks to.
    private var chatFriend = ""
    /// How long the simulated friend takes to answer ($SLUICE_DEMO_REPLY_MS, for tests; 2 s by default).
    static let replyDelay: Duration = .milliseconds(Int(ProcessInfo.processInfo.environment["SLUICE_DEMO_REPLY_MS"] ?? "") ?? 2_000)
    /// The screen shown.
    var screen = Screen.people
    /// The line shown under the screen (cleared after another process changes the data).
    var message = ""
    /// The sync client's state, shown under the screen when the demo follows a service.
    var syncStatus = ""
    /// The conflict inbox, when the demo follows a service (its banner shows under the screen).
    var inbox: ConflictInboxModel?
    /// The subscriptions that redraw the screen.
    private var watching = Set<AnyCancellable>()
    /// Whether a redraw is already queued (changes in one turn redraw once).
    private var redrawScheduled = false
    /// Whether standard output is a terminal (then the screen is cleared before each redraw).
    private let isTerminal = Terminal.stdoutIsTerminal

    /// The demo over `store`, starting on the people screen.
    init(store: Store, path: String) throws {
        self.store = store
        self.path = path
        peopleModel = PeopleViewModel(store: store)
        watch(peopleModel.objectWillChange)
        watch(peopleModel.people.objectWillChange)
        watch(peopleModel.sections.objectWillChange)
        // A search replaces the list (once typing pauses): follow the new one.
        peopleModel.$people.dropFirst().sink { @Sendable [weak self] people in
            DispatchQueue.main.async {
                MainActor.assumeIsolated {
                    guard let self else { return }
                    self.watch(people.objectWillChange)
                    self.watch(self.peopleModel.sections.objectWillChange)
                }
            }
        }
        .store(in: &watching)
    }

    /// Redraws (once per turn of the main queue) whenever `publisher` emits.
    func watch<P: Publisher>(_ publisher: P) where P.Failure == Never {
        publisher.sink { @Sendable [weak self] _ in
            DispatchQueue.main.async { MainActor.assumeIsolated { self?.scheduleRedraw() } }
        }
        .store(in: &watching)
    }

    /// A view model changed: redraw. A change heard more than a second after the last command
    /// ended comes from elsewhere (another process, a sync, the chat's reply): the command's
    /// message described the screen before it, and goes.
    private func scheduleRedraw() {
        guard !redrawScheduled else { return }
        redrawScheduled = true
        DispatchQueue.main.async {
            MainActor.assumeIsolated {
                self.redrawScheduled = false
                if .now - self.commandEnded > .seconds(1) { self.message = "" }
                self.render()
            }
        }
    }

    /// When the last command finished (its own changes arrive within moments of it).
    private var commandEnded = ContinuousClock.now

    /// Handles one command line (waiting for its write); false to quit.
    func handle(_ line: String) async -> Bool {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        let (command, argument) = trimmed.split(separator: " ", maxSplits: 1).map(String.init).splitFirst()
        message = ""
        switch command.lowercased() {
        case "", "help":
            message = "commands: people · search TEXT · add FIRST LAST · delete N · package [ID] · first NAME · last NAME · street TEXT · item · chat [ID] · send TEXT · older"
                + (inbox == nil ? "" : " · conflicts · restore N · dismiss N") + " · quit"
        case "quit", "exit", "q": return false
        case "people": screen = .people
        case "search":
            screen = .people
            peopleModel.searchText.send(argument)
            // A command is whole text, not typing: show the list of this search.
            await peopleModel.waitForSearch()
        case "add":
            let names = argument.split(separator: " ", maxSplits: 1).map(String.init)
            peopleModel.firstName = names.first ?? ""
            peopleModel.lastName = names.count > 1 ? names[1] : ""
            if let person = await peopleModel.addPerson() {
                let search = peopleModel.searchText.value.trimmingCharacters(in: .whitespaces)
                let shown = await isShown(person, search: search)
                message = "added \(person.fullName)" + (shown ? "" : " (not in this list: the search \"\(search)\" hides them; type `search` to see everyone)")
            } else {
                message = peopleModel.lastError.map { "could not add: \($0.message)" } ?? "add needs a first and a last name"
            }
            screen = .people
        case "delete":
            let count = peopleModel.people.items.count
            if let number = Int(argument), number >= 1, number <= count {
                await peopleModel.delete(at: IndexSet(integer: number - 1))
            } else {
                message = count == 0 ? "the list is empty: there is nothing to delete"
                    : "delete needs a row number from the list: 1" + (count > 1 ? " to \(count)" : "") + (argument.isEmpty ? "" : ", not \(argument)")
            }
        case "package": openPackage(argument)
        case "first": await editPackage { $0.recipientFirstName = argument }
        case "last": await editPackage { $0.recipientLastName = argument }
        case "street": await editPackage { $0.street = argument }
        case "item": await editPackage { await $0.addRandomItem() }
        case "chat": openChat(argument)
        case "older":
            guard let chatModel else { message = "open a chat first: chat [ID]"; break }
            chatModel.loadOlder()
        case "send":
            if let chatModel { await chatModel.send(argument) } else { message = "open a chat first: chat [ID]" }
        case "conflicts", "restore", "dismiss": await handleInbox(command.lowercased(), argument)
        default: message = "unknown command '\(command)'; type help"
        }
        commandEnded = .now
        render()
        return true
    }

    /// Opens the package screen for the package whose id is `argument`.
    /// Whether the people list's search shows a person (true without a search, or when the store cannot tell).
    private func isShown(_ person: Person, search: String) async -> Bool {
        guard let query = FullTextQuery.prefixes(of: search), let id = person.id else { return true }
        let found = try? await store.read { db in try db.fetchCount(Person.self, filter: .matching(query) && Filter("id == $0", id)) }
        return found.map { $0 > 0 } ?? true
    }

    private func openPackage(_ argument: String) {
        let id = Int64(argument) ?? (try? store.read { db in try db.fetchAll(Package.self, orderBy: [Ordering("id")], limit: 1).first?.id }) ?? nil
        guard let id else { message = "there is no package"; return }
        do {
            let model = try PackageViewModel(store: store, packageID: id)
            packageModel = model
            watch(model.objectWillChange)
            screen = .package
        } catch {
            message = "\(error)"
        }
    }

    /// Runs an edit on the open package, reporting an error under the screen.
    private func editPackage(_ edit: (PackageViewModel) async -> Void) async {
        guard let packageModel else { message = "open a package first: package [ID]"; return }
        await edit(packageModel)
        await packageModel.waitForWrites()
        screen = .package
    }

    /// Opens the chat screen for the conversation whose id is `argument`.
    private func openChat(_ argument: String) {
        let id = Int64(argument) ?? 1
        // The friend is whoever else writes in this conversation (a new one: "a friend").
        let friend = (try? store.read { db in
            try db.fetchRows(sql: "SELECT sender FROM message WHERE conversation_id = ? AND sender != ? ORDER BY sent_at DESC LIMIT 1",
                             arguments: [.integer(id), .text(ConversationViewModel.localSender)]).first.flatMap { String(sqliteValue: $0[0]) }
        }) ?? nil
        chatFriend = friend ?? "a friend"
        let model = ConversationViewModel(store: store, conversationID: id,
                                          session: SimulatedSession(friend: friend ?? "Friend", delay: Self.replyDelay, clock: ContinuousClock()))
        chatModel = model
        watch(model.objectWillChange)
        screen = .chat
    }

    /// Draws the current screen (clearing a terminal first).
    func render() {
        var lines: [String] = []
        switch screen {
        case .people:
            let items = peopleModel.people.items
            let search = peopleModel.searchText.value
            lines.append("Sluice demo · people (\(items.count))" + (search.isEmpty ? "" : " matching \"\(search)\"") + " · \(path)")
            // By initial, as a sectioned table shows them; numbered as in the flat list (delete N).
            var number = 0
            var shown = 0
            for section in peopleModel.sections.sections {
                guard shown < 20 else { break }
                lines.append("  \(section.key) (\(section.items.count))")
                for item in section.items {
                    number += 1
                    guard shown < 20 else { break }
                    lines.append(String(format: "%3d. ", number) + item.name)
                    shown += 1
                }
            }
            if items.count > shown { lines.append("     … \(items.count - shown) more (search to narrow)") }
        case .package:
            guard let packageModel else { break }
            lines.append("Sluice demo · package editor")
            lines.append(contentsOf: packageModel.summary.split(separator: "\n").map(String.init))
        case .conflicts: lines.append(contentsOf: inboxLines())
        case .chat:
            guard let chatModel else { break }
            let held = chatModel.messages.items.count
            let total = chatModel.totalCount.map { " of \($0)" } ?? ""
            lines.append("Sluice demo · chat with \(chatFriend) · \(held)\(total) messages held" + (chatModel.hasOlder == true ? " (older: load more)" : ""))
            for item in chatModel.messages.items.suffix(20) { lines.append("  \(item.sender): \(item.text)") }
        }
        if !message.isEmpty { lines.append(message) }
        if screen != .conflicts, let banner = inbox?.summary { lines.append(banner + " (type conflicts)") }
        if !syncStatus.isEmpty { lines.append(syncStatus) }
        lines.append("> (help for commands)")
        let text = lines.joined(separator: "\n")
        let output = isTerminal ? "\u{1B}[2J\u{1B}[H" + text + "\n" : "\n---\n" + text + "\n"
        FileHandle.standardOutput.write(Data(output.utf8))
    }
}

private extension Array where Element == String {
    func splitFirst() -> (String, String) {
        (first ?? "", count > 1 ? self[1] : "")
    }
}
