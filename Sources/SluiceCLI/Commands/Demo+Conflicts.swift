import SluiceDemo
import SluiceSyncClient

/// The demo's conflict inbox: a banner under every screen while it holds records, a screen
/// that lists them, and `restore N` / `dismiss N`.
extension DemoApp {
    /// Shows `model`'s banner and redraws as its records come and go.
    func follow(_ model: ConflictInboxModel) {
        inbox = model
        watch(model.conflicts.objectWillChange)
        watch(model.objectWillChange)
    }

    /// `conflicts`, `restore N`, `dismiss N`.
    func handleInbox(_ command: String, _ argument: String) async {
        guard let inbox else { message = "the conflict inbox needs --sync-server"; return }
        screen = .conflicts
        guard command != "conflicts" else { return }
        let items = inbox.items
        guard let number = Int(argument), number >= 1, number <= items.count else {
            message = items.isEmpty ? "the inbox is empty" : "\(command) needs a number from the list: 1" + (items.count > 1 ? " to \(items.count)" : "")
            return
        }
        let item = items[number - 1]
        if command == "restore" { await inbox.restore(item) } else { await inbox.dismiss(item) }
        message = inbox.lastError.map { "could not \(command): \($0.message)" } ?? (command == "restore" ? "restored \(item.title)" : "dismissed \(item.title)")
    }

    /// The inbox screen's lines.
    func inboxLines() -> [String] {
        guard let inbox else { return [] }
        var lines = ["Sluice demo · conflicts (\(inbox.items.count))" + (inbox.summary.map { " · " + $0 } ?? "")]
        for (index, item) in inbox.items.enumerated() { lines.append(String(format: "%3d. ", index + 1) + "\(item.title): \(item.text)") }
        if inbox.items.isEmpty { lines.append("  nothing was lost") }
        return lines
    }
}
