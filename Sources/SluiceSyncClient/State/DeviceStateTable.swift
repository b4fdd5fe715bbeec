import Sluice

/// `sluice_sync_state`: the device's settings and positions, one value per key — its id,
/// the history's database id, the pull cursor, the last log sequence pushed, the clocks,
/// the file it was recorded in, the first upload's progress, when it last synced, the
/// subscriptions its rows were pulled for, whether it started from a snapshot, and the
/// ids it had before (`ancestors`). The only code that reads or writes the table.
struct DeviceStateTable {
    static let name = "sluice_sync_state"

    enum Key: String, CaseIterable {
        case device, database, cursor, pushed, clock, stamped, file
        /// Present once the device's first upload of its rows is over.
        case uploaded
        case uploadFloor = "upload_floor", uploadTable = "upload_table", uploadRowID = "upload_rowid", uploadPart = "upload_part"
        /// Milliseconds since 1970 when a sync last completed.
        case lastSync = "last_sync"
        case subscriptions, snapshot
        /// The device ids this store had before, separated by spaces.
        case ancestors
    }

    let db: Database

    init(_ db: Database) { self.db = db }

    /// Whether the table is there (a store a client never opened has none).
    func exists() throws -> Bool { try db.tableExists(Self.name) }

    /// The value of every key that has one.
    func values() throws -> [Key: SQLiteValue] {
        var values: [Key: SQLiteValue] = [:]
        for row in try db.fetchRows(sql: "SELECT key, value FROM sluice_sync_state") {
            if case .text(let name)? = row["key"], let key = Key(rawValue: name) { values[key] = row["value"] }
        }
        return values
    }

    func value(_ key: Key) throws -> SQLiteValue? {
        try db.fetchRows(sql: "SELECT value FROM sluice_sync_state WHERE key = ?", arguments: [.text(key.rawValue)]).first?[0]
    }

    func contains(_ key: Key) throws -> Bool { try value(key) != nil }

    func set(_ key: Key, _ value: SQLiteValue) throws {
        try db.execute(sql: "INSERT INTO sluice_sync_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                       arguments: [.text(key.rawValue), value])
    }

    /// Sets `key` unless it has a value already.
    func setIfMissing(_ key: Key, _ value: SQLiteValue) throws {
        try db.execute(sql: "INSERT INTO sluice_sync_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
                       arguments: [.text(key.rawValue), value])
    }

    func remove(_ key: Key) throws {
        try db.execute(sql: "DELETE FROM sluice_sync_state WHERE key = ?", arguments: [.text(key.rawValue)])
    }

    /// Adds `word` to the space-separated list under `key`.
    func append(_ word: String, to key: Key) throws {
        try db.execute(sql: """
            INSERT INTO sluice_sync_state (key, value) VALUES (?, ?)
            ON CONFLICT (key) DO UPDATE SET value = sluice_sync_state.value || ' ' || excluded.value
            """, arguments: [.text(key.rawValue), .text(word)])
    }
}
