import Foundation
import Sluice
import SluiceDemo
import SluiceSyncProtocol

/// The synced tables in one canonical text form, for devices and the service alike: one
/// line per row, `table gid column=type:value ...` with columns sorted and foreign keys as
/// `→gid` (local ids differ between devices), lines sorted.
public enum SyncContent {
    public static let references = ["package": ["recipient_id": "person", "sender_id": "person"], "package_content": ["package_id": "package"]]

    static func line(_ table: String, _ gid: String, _ values: [(String, String)]) -> String {
        ([table + " " + gid] + values.sorted { $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }).joined(separator: " ")
    }

    static func render(_ value: SQLiteValue) -> String { "\(value.typeName):\(value)" }

    /// A device's synced tables.
    public static func of(_ store: Store) throws -> [String] {
        try store.read { db in
            var ids: [String: [Int64: String]] = [:]
            for row in try db.fetchRows(sql: "SELECT tbl, local, gid FROM sluice_sync_id") {
                guard case .text(let table) = row[0], case .integer(let local) = row[1], case .text(let gid) = row[2] else { continue }
                ids[table, default: [:]][local] = gid
            }
            var lines: [String] = []
            for table in DemoSchema.syncedTables {
                for row in try db.fetchRows(sql: "SELECT rowid AS r, * FROM \"\(table)\"") {
                    guard case .integer(let local) = row[0] else { continue }
                    var values: [(String, String)] = []
                    for (column, value) in zip(row.columns.dropFirst(2), row.values.dropFirst(2)) {
                        if let parent = references[table]?[column], case .integer(let id) = value {
                            values.append((column, "→\(ids[parent]?[id] ?? "unmapped-\(id)")"))
                        } else {
                            values.append((column, render(value)))
                        }
                    }
                    lines.append(line(table, ids[table]?[local] ?? "unmapped-\(local)", values))
                }
            }
            return lines.sorted()
        }
    }

    /// A service's live rows (its current rows, deleted ones left out).
    public static func of(serviceRows rows: [(table: String, id: String, values: [String: SyncValue])]) -> [String] {
        rows.map { table, id, values in
            line(table, id, values.map { column, value -> (String, String) in
                switch value {
                case .null: (column, render(.null))
                case .integer(let value): (column, render(.integer(value)))
                case .real(let value): (column, render(.real(value)))
                case .text(let value): (column, render(.text(value)))
                case .blob(let value): (column, render(.blob(value)))
                case .reference(let gid): (column, "→" + gid)
                case .attachment(let attachment): (column, "attachment:\(attachment.hash)")
                }
            })
        }.sorted()
    }

    /// The `column` of each row of `table` in `content`, by global id (values as rendered,
    /// `text:Ana`).
    public static func column(_ column: String, of table: String, in content: [String]) -> [String: String] {
        var found: [String: String] = [:]
        for line in content where line.hasPrefix(table + " ") {
            let parts = line.split(separator: " ").map(String.init)
            guard parts.count > 1, let value = parts.dropFirst(2).first(where: { $0.hasPrefix(column + "=") }) else { continue }
            found[parts[1]] = String(value.dropFirst(column.count + 1))
        }
        return found
    }
}
