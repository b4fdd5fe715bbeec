import Foundation
import SluiceDemo
import SluiceSyncClient
import SluiceTestSupport
import Store

/// One sync space for a test: its own PostgreSQL database, a service, a token.
final class SyncSpace: @unchecked Sendable {
    // @unchecked Sendable: set up once, then only read.
    let postgres: String
    let service: SyncServiceProcess
    let token: String

    init(serviceArguments: [String] = []) throws {
        let cluster = try PostgresCluster.shared()
        postgres = try cluster.makeDatabase()
        token = try SyncServiceProcess.addToken(postgres: postgres, space: "test")
        service = try SyncServiceProcess(postgres: postgres, extraArguments: serviceArguments)
    }

    /// A device: a fresh demo store and its client.
    func device(_ configure: (inout SyncConfiguration) -> Void = { _ in }) throws -> Device {
        try Device(server: service.url, token: token, configure)
    }
}

/// A device in a test: a demo store on its own file and a sync client.
final class Device: @unchecked Sendable {
    // @unchecked Sendable: used by one test task at a time.
    let database = TemporaryDatabase()
    let store: Store
    let client: SyncClient

    init(server: URL, token: String, _ configure: (inout SyncConfiguration) -> Void = { _ in }) throws {
        store = try database.store(migrations: DemoSchema.migrations)
        var configuration = SyncConfiguration(tables: DemoSchema.syncedTables)
        configure(&configuration)
        client = try SyncClient(store: store, server: server, token: token, configuration: configuration)
    }

    @discardableResult
    func sql(_ sql: String, _ arguments: [SQLiteValue] = []) throws -> Int64 {
        try store.write { db in
            try db.execute(sql: sql, arguments: arguments)
            return db.lastInsertedRowID
        }
    }

    func rows(_ sql: String) throws -> [String] {
        try store.read { db in try db.fetchRows(sql: sql).map { $0.values.map { "\($0)" }.joined(separator: "|") } }
    }

    /// The synced tables as every device must agree on them: rows by global id, foreign
    /// keys as the global id they point at (local ids differ between devices), sorted.
    func content() throws -> [String] {
        try store.read { db in
            var ids: [String: [Int64: String]] = [:]
            for row in try db.fetchRows(sql: "SELECT tbl, local, gid FROM sluice_sync_id") {
                guard case .text(let table) = row[0], case .integer(let local) = row[1], case .text(let gid) = row[2] else { continue }
                ids[table, default: [:]][local] = gid
            }
            let references = ["package": ["recipient_id": "person", "sender_id": "person"], "package_content": ["package_id": "package"]]
            var lines: [String] = []
            for table in DemoSchema.syncedTables {
                for row in try db.fetchRows(sql: "SELECT rowid AS r, * FROM \"\(table)\"") {
                    guard case .integer(let local) = row[0] else { continue }
                    var line = "\(table) \(ids[table]?[local] ?? "unmapped-\(local)")"
                    for (column, value) in zip(row.columns.dropFirst(2), row.values.dropFirst(2)) {
                        if let parent = references[table]?[column], case .integer(let id) = value {
                            line += " \(column)=→\(ids[parent]?[id] ?? "unmapped-\(id)")"
                        } else {
                            line += " \(column)=\(value.typeName):\(value)"
                        }
                    }
                    lines.append(line)
                }
            }
            return lines.sorted()
        }
    }
}
