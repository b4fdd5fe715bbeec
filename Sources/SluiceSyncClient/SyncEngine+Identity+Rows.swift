import Foundation
import Sluice

extension SyncEngine {
    /// The row with this rowid, or nil.
    func currentRow(_ table: LocalTable, _ local: Int64, _ db: Database) throws -> Row? {
        try db.fetchRows(sql: "SELECT * FROM \(quoteIdentifier(table.name)) WHERE rowid = ?", arguments: [.integer(local)]).first
    }

    /// Forgets the global id of a row that left this device's subset (it stays everywhere
    /// else): SQLite may give its rowid to a row made here next, which must not be pushed
    /// under the id of the row that left (that would overwrite it on the service).
    func forget(_ table: String, _ local: Int64, _ db: Database) throws {
        try IdentityMap(db).remove(table, local)
    }
}
