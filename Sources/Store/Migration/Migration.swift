import Foundation

/// One schema migration: a numbered SQL script.
///
/// Files are named `NNN_description.sql` (`001_create_person.sql`); the
/// number is the version. Each migration runs in its own transaction and is
/// recorded with a checksum of its SQL, so an edited applied migration is
/// refused instead of silently diverging.
public struct Migration: Sendable, Hashable {
    /// The version: migrations apply in increasing version order.
    public let version: Int
    /// The description part of the name (`create_person`).
    public let name: String
    /// The SQL script. (For a migration made from a model: the table a new
    /// database gets; an older one gets the columns it lacks.)
    public let sql: String
    /// For a migration made from a model: the table it creates or brings up to the model.
    let modelTable: ModelTable?

    /// Creates a migration.
    ///
    /// - Parameters:
    ///   - version: its number; migrations run in ascending order.
    ///   - name: a description (the file name's part after the number).
    ///   - sql: the SQL it runs, in one transaction.
    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
        modelTable = nil
    }

    /// A migration made from a model's declared columns (the `@Table`
    /// macro's): it creates the table — each property's column with its
    /// type, `NOT NULL` unless the property is optional, its literal default
    /// value, the `id` as primary key — or, when the table exists, adds the
    /// columns the model declares that it lacks.
    ///
    /// ```swift
    /// let migrations = [
    ///     Migration.table(for: ChatMessage.self, version: 1),
    ///     Migration(version: 2, name: "message_by_conversation",
    ///               sql: "CREATE INDEX message_by_conversation ON chat_message (conversation_id, sent_at)"),
    ///     // Later, after adding `var editedAt: Date?` to the model:
    ///     Migration.table(for: ChatMessage.self, version: 3),
    /// ]
    /// ```
    ///
    /// Its checksum names the table, not the columns: the model may grow
    /// after the migration shipped, and a new database then gets the newer
    /// table at once (the later `table(for:)` migrations find nothing to
    /// add). Renames, removals and indexes are SQL migrations.
    ///
    /// - Parameters:
    ///   - type: the model.
    ///   - version: the migration's number.
    ///   - name: its description; `table_` and the table's name unless given.
    /// - Returns: the migration.
    public static func table<M: Model>(for type: M.Type, version: Int, name: String? = nil) -> Migration {
        let table = ModelTable(model: String(describing: type), table: M.tableName, columns: M.columnDeclarations)
        return Migration(version: version, name: name ?? "table_" + M.tableName, modelTable: table)
    }

    private init(version: Int, name: String, modelTable: ModelTable) {
        self.version = version
        self.name = name
        self.modelTable = modelTable
        sql = modelTable.script
    }

    /// Runs the migration's SQL, or brings its model's table up to the model.
    func apply(on db: Database) throws {
        if let modelTable {
            try modelTable.apply(on: db)
        } else {
            try db.execute(script: sql)
        }
    }

    /// `NNN_name`, as the file is named.
    public var identifier: String { Self.identifier(version: version, name: name) }

    static func identifier(version: Int, name: String) -> String {
        let digits = String(version)
        return String(repeating: "0", count: max(0, 3 - digits.count)) + digits + "_" + name
    }

    /// A 64-bit FNV-1a hash of the SQL's UTF-8 bytes, in hex (for a
    /// migration made from a model, of its table's name: see `table(for:version:name:)`).
    public var checksum: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in (modelTable.map { "sluice model table " + $0.table } ?? sql).utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Reads every `NNN_description.sql` file of a directory, sorted by version.
    ///
    /// - Throws: `.migration` for a `.sql` file whose name does not start
    ///   with a number and `_`, two files with the same number, or an
    ///   unreadable file.
    ///
    /// - Parameter directory: the folder of `.sql` files.
    /// - Returns: the migrations, by version.
    public static func load(from directory: URL) throws -> [Migration] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw StoreError(code: .migration, message: "cannot read migrations directory \(directory.path): \(error.localizedDescription)")
        }
        var migrations: [Migration] = []
        for file in names.sorted() where file.hasSuffix(".sql") {
            let stem = String(file.dropLast(4))
            let digits = stem.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, let version = Int(digits), stem.dropFirst(digits.count).first == "_" else {
                throw StoreError(code: .migration, message: "migration file \(file) in \(directory.path) is not named NNN_description.sql")
            }
            let url = directory.appendingPathComponent(file)
            guard let data = FileManager.default.contents(atPath: url.path) else {
                throw StoreError(code: .migration, message: "cannot read migration file \(url.path)")
            }
            guard let sql = String(data: data, encoding: .utf8) else {
                throw StoreError(code: .migration, message: "migration file \(url.path) is not UTF-8 text")
            }
            if let clash = migrations.first(where: { $0.version == version }) {
                throw StoreError(code: .migration, message: "migration files \(clash.identifier).sql and \(file) have the same version \(version)")
            }
            migrations.append(Migration(version: version, name: String(stem.dropFirst(digits.count + 1)), sql: sql))
        }
        return migrations.sorted { $0.version < $1.version }
    }
}

/// A migration as recorded in the database.
public struct AppliedMigration: Sendable, Hashable {
    /// Its version.
    public let version: Int
    /// Its name.
    public let name: String
    /// The checksum of its SQL when it was applied.
    public let checksum: String
    /// When it was applied (UTC text).
    public let appliedAt: String

    /// `NNN_name`, as its file was named.
    public var identifier: String { Migration.identifier(version: version, name: name) }
}
