import ArgumentParser
import Foundation
import SluiceSyncClient
import Sluice

/// `sluice sync conflicts`: the conflict inbox, offline: list, restore, dismiss.
struct SyncConflicts: ParsableCommand {
    /// The command's name, abstract and discussion, as `--help` shows them.
    static let configuration = CommandConfiguration(
        commandName: "conflicts",
        abstract: "List what sync decided against (values that lost, edits that lost to deletes, quarantined transactions); restore or dismiss one.",
        discussion: """
            One record per line, oldest first. --format json prints JSON Lines: {"id":1,"table":"person","key":3,"gid":"...",\
            "column":"city","kind":"column","rule":"last-writer-wins","kept":{"value":"Oslo","device":"...","clock":...},\
            "lost":{"value":"Bergen","device":"...","clock":...},"at":"2026-12-02T10:00:00.000Z"}. --restore ID writes the lost \
            value back (a new write that wins and syncs on the next sync); --dismiss ID drops the record. An id the inbox \
            does not hold exits 1 and changes nothing.
            """)

    /// Where the store is and how to open it.
    @OptionGroup var options: StoreOptions

    /// The `--format` option: table (readable) or json (JSON Lines).
    @Option(help: "Output format: table (readable) or json (JSON Lines).")
    var format: Watch.WatchFormat = .table

    /// The `--restore` option: the record whose lost value is written back.
    @Option(help: ArgumentHelp("Write back what record ID lost, and drop the record.", valueName: "id"))
    var restore: Int64?

    /// The `--dismiss` option: the record dropped.
    @Option(help: ArgumentHelp("Drop record ID: what it lost stays lost.", valueName: "id"))
    var dismiss: Int64?

    /// Checks the options' values before anything is opened.
    func validate() throws {
        guard restore == nil || dismiss == nil else { throw ValidationError("--restore and --dismiss: choose one") }
    }

    /// Runs the command.
    func run() throws {
        let store = try options.openExisting(readOnly: restore == nil && dismiss == nil)
        let configuration = SyncStores.configuration
        guard try SyncClient.savedState(of: store, configuration: configuration) != nil else {
            print("\(options.path) has never been synced (sluice sync --server URL --token TOKEN)")
            return
        }
        if let restore {
            try SyncClient.restoreConflict(restore, in: store, configuration: configuration)
            print("restored \(restore): it syncs with the next sync")
            return
        }
        if let dismiss {
            try SyncClient.dismissConflict(dismiss, in: store)
            print("dismissed \(dismiss)")
            return
        }
        let conflicts = try SyncClient.conflicts(in: store)
        for conflict in conflicts {
            print(format == .json ? Self.json(conflict) : Self.line(conflict))
        }
        if conflicts.isEmpty, format == .table { print("no conflicts") }
    }

    /// A record as one readable line.
    static func line(_ conflict: SyncConflict) -> String {
        func side(_ side: SyncConflict.Side) -> String {
            let who = [side.device.map { String($0.prefix(8)) }, side.clock.map { Timestamps.iso8601($0.date) }].compactMap { $0 }.joined(separator: " ")
            return TableRenderer.cell(side.value) + (who.isEmpty ? "" : " (\(who))")
        }
        let place = "\(conflict.table) \(conflict.rowID)" + (conflict.column.map { ".\($0)" } ?? "")
        let what = switch conflict.kind {
        case .column, .merge: "kept \(side(conflict.kept)), lost \(side(conflict.lost))"
        case .editLostToDelete: "the row was deleted; lost its values " + (conflict.row.map(Self.values) ?? "")
            + " (\(conflict.lost.device.map { String($0.prefix(8)) } ?? "?"))"
        case .deleteLostToEdit: "a delete by \(conflict.lost.device.map { String($0.prefix(8)) } ?? "?") was undone by an edit"
        case .quarantined: "a transaction from \(conflict.lost.device.map { String($0.prefix(8)) } ?? "?") set aside: \(conflict.detail ?? "")"
        }
        return "#\(conflict.id ?? 0)  \(Timestamps.iso8601(conflict.date))  \(place): \(what)  [\(conflict.rule.rawValue)]"
    }

    private static func values(_ row: [String: SQLiteValue]) -> String {
        row.sorted { $0.key < $1.key }.map { "\($0.key)=\(TableRenderer.cell($0.value))" }.joined(separator: " ")
    }

    /// A record as one JSON object (values typed as `sluice query --format json` types them).
    static func json(_ conflict: SyncConflict) -> String {
        func side(_ side: SyncConflict.Side) -> String {
            #"{"value":"# + JSONRows.value(side.value) + #","device":"# + (side.device.map(JSONRows.string) ?? "null")
                + #","clock":"# + (side.clock.map { String($0.rawValue) } ?? "null") + "}"
        }
        var fields = [
            #""id":"# + String(conflict.id ?? 0), #""table":"# + JSONRows.string(conflict.table), #""key":"# + String(conflict.rowID),
            #""gid":"# + JSONRows.string(conflict.globalID), #""column":"# + (conflict.column.map(JSONRows.string) ?? "null"),
            #""kind":"# + JSONRows.string(conflict.kind.rawValue), #""rule":"# + JSONRows.string(conflict.rule.rawValue),
            #""kept":"# + side(conflict.kept), #""lost":"# + side(conflict.lost),
        ]
        if let row = conflict.row {
            fields.append(#""row":{"# + row.sorted { $0.key < $1.key }.map { JSONRows.string($0.key) + ":" + JSONRows.value($0.value) }.joined(separator: ",") + "}")
        }
        if let seq = conflict.seq { fields.append(#""seq":"# + String(seq)) }
        if let detail = conflict.detail { fields.append(#""detail":"# + JSONRows.string(detail)) }
        fields.append(#""at":"# + JSONRows.string(Timestamps.iso8601(conflict.date)))
        return "{" + fields.joined(separator: ",") + "}"
    }
}
