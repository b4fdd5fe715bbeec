import Foundation

/// The tables and columns a sync space may hold: the service refuses every pushed change
/// that does not fit (unknown table or column, wrong storage class, NULL in a NOT NULL
/// column, a foreign key that is not a reference, an insert that misses a required column).
public struct SyncSchema: Sendable, Hashable, Codable {
    /// A column's accepted storage classes (from its SQLite affinity).
    public enum ColumnType: String, Sendable, Hashable, Codable {
        /// INTEGER affinity: integers (and reals SQLite could not make integral).
        case integer
        /// REAL affinity: reals and integers.
        case real
        /// TEXT affinity: text.
        case text
        /// BLOB affinity: bytes.
        case blob
        /// NUMERIC affinity: integers, reals and text.
        case numeric
        /// No affinity: any storage class.
        case any
    }

    /// A synced column (the primary key is not one: rows are named by global id).
    public struct Column: Sendable, Hashable, Codable {
        /// Its name.
        public var name: String
        /// What it accepts.
        public var type: ColumnType
        /// Whether it accepts NULL.
        public var isNullable: Bool
        /// Whether an insert may leave it out.
        public var hasDefault: Bool
        /// The synced table a foreign key column points at (its values are references).
        public var references: String?
        /// What the foreign key does when the row it points at is deleted: the service
        /// applies `cascade` and `setNull` to every row that points at a deleted row,
        /// whoever deleted it and whenever the reference arrives (nil: nothing).
        public var onDelete: ReferenceAction?
        /// Whether its blobs travel out of line, as attachments (``SyncAttachment``): its
        /// values are attachments or NULL, never inline bytes.
        public var isAttachment: Bool

        /// A column.
        ///
        /// - Parameters:
        ///   - name: the column's name.
        ///   - type: the kind of value it holds.
        ///   - isNullable: whether it may be NULL.
        ///   - hasDefault: whether an insert may leave it out.
        ///   - references: the synced table a foreign key points at, if any.
        ///   - onDelete: what the foreign key does when the row it points at is deleted.
        ///   - isAttachment: whether its blobs travel out of line.
        public init(name: String, type: ColumnType, isNullable: Bool, hasDefault: Bool = false, references: String? = nil,
                    onDelete: ReferenceAction? = nil, isAttachment: Bool = false) {
            self.name = name
            self.type = type
            self.isNullable = isNullable
            self.hasDefault = hasDefault
            self.references = references
            self.onDelete = onDelete
            self.isAttachment = isAttachment
        }

        private enum CodingKeys: String, CodingKey { case name, type, isNullable, hasDefault, references, onDelete, isAttachment }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            type = try container.decode(ColumnType.self, forKey: .type)
            isNullable = try container.decode(Bool.self, forKey: .isNullable)
            hasDefault = try container.decode(Bool.self, forKey: .hasDefault)
            references = try container.decodeIfPresent(String.self, forKey: .references)
            onDelete = try container.decodeIfPresent(ReferenceAction.self, forKey: .onDelete)
            // Schemas registered before attachments were have no such key.
            isAttachment = try container.decodeIfPresent(Bool.self, forKey: .isAttachment) ?? false
        }
    }

    /// A foreign key's ON DELETE action, as SQLite names it.
    public enum ReferenceAction: String, Sendable, Hashable, Codable {
        /// The row goes with the row it points at.
        case cascade = "CASCADE"
        /// The reference becomes NULL.
        case setNull = "SET NULL"
        /// The reference becomes its default (not applied by the service).
        case setDefault = "SET DEFAULT"
        /// The delete is refused while rows point at the row (not applied by the service).
        case restrict = "RESTRICT"
        /// Nothing (SQLite's default).
        case noAction = "NO ACTION"
    }

    /// A reference whose ON DELETE action the service applies.
    public struct DeleteRule: Sendable, Hashable {
        /// The child table (lowercased, as the service stores table names).
        public var table: String
        /// The reference column, as registered.
        public var column: String
        /// The parent table (lowercased).
        public var parent: String
        /// `cascade` or `setNull`.
        public var action: ReferenceAction
    }

    /// The references whose ON DELETE action is CASCADE or SET NULL.
    public var deleteRules: [DeleteRule] {
        tables.flatMap { table in
            table.columns.compactMap { column -> DeleteRule? in
                guard let parent = column.references, let action = column.onDelete, action == .cascade || action == .setNull else { return nil }
                return DeleteRule(table: table.name.lowercased(), column: column.name, parent: parent.lowercased(), action: action)
            }
        }
    }

    /// A synced table.
    public struct Table: Sendable, Hashable, Codable {
        /// Its name.
        public var name: String
        /// Its columns, the primary key left out.
        public var columns: [Column]
        /// Its `CREATE TABLE` statement, when registered: the service checks each row a
        /// push leaves against the statement's CHECK constraints (nil: types, NOT NULL and
        /// references only).
        public var sql: String?

        /// A table.
        ///
        /// - Parameters:
        ///   - name: the table's name.
        ///   - columns: its synced columns (the integer primary key left out).
        ///   - sql: its `CREATE TABLE` statement, whose CHECK constraints the service applies (nil: none).
        public init(name: String, columns: [Column], sql: String? = nil) {
            self.name = name
            self.columns = columns
            self.sql = sql
        }

        /// The column named `name` (ASCII case-insensitive, as SQLite).
        ///
        /// - Parameter name: the column's name, in any ASCII case.
        /// - Returns: the column, or nil.
        public func column(named name: String) -> Column? {
            columns.first { SyncSchema.sameName($0.name, name) }
        }
    }

    /// The tables.
    public var tables: [Table]

    /// A schema.
    ///
    /// - Parameter tables: the synced tables.
    public init(tables: [Table]) { self.tables = tables }

    /// The table named `name` (ASCII case-insensitive, as SQLite).
    ///
    /// - Parameter name: the table's name, in any ASCII case.
    /// - Returns: the table, or nil.
    public func table(named name: String) -> Table? {
        tables.first { Self.sameName($0.name, name) }
    }

    /// Whether two names are one to SQLite: equal but for the case of ASCII letters. It
    /// allocates nothing (a push checks every value's column by it; comparing lowercased
    /// copies was most of the service's time in ``normalized(_:)``).
    ///
    /// - Parameters:
    ///   - a: a name.
    ///   - b: another.
    /// - Returns: whether SQLite takes them for the same name.
    public static func sameName(_ a: String, _ b: String) -> Bool {
        if a == b { return true }
        var left = a.utf8.makeIterator()
        var right = b.utf8.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return true
            case let (x?, y?) where x == y || (x | 0x20 == y | 0x20 && (x | 0x20) >= 0x61 && (x | 0x20) <= 0x7A): continue
            default: return false
            }
        }
    }

    /// Longest accepted global id.
    public static let maximumIDLength = 128

    /// Checks one change; the error names the table, row and column at fault.
    ///
    /// - Parameter change: the change to check.
    /// - Throws: `SyncErrorBody` (`invalid`) naming the unknown table or
    ///   column, the value of the wrong type, or the missing required column.
    public func validate(_ change: SyncChange) throws(SyncErrorBody) {
        _ = try normalized(change)
    }

    /// The change with its table and columns named as this schema spells them (SQLite's
    /// names are ASCII case-insensitive: `AGE` and `age` are one column, stored once), after
    /// the checks of ``validate(_:)``; a change that names one column twice is refused.
    ///
    /// - Parameter change: the change to check.
    /// - Returns: the change, spelled as the schema spells its names.
    /// - Throws: `SyncErrorBody` (`invalid`), as ``validate(_:)``, or for a column named twice.
    public func normalized(_ change: SyncChange) throws(SyncErrorBody) -> SyncChange {
        guard let table = table(named: change.table) else {
            throw SyncErrorBody(.invalid, message: "unknown table '\(change.table)'")
        }
        guard !change.id.isEmpty, change.id.utf8.count <= Self.maximumIDLength else {
            throw SyncErrorBody(.invalid, message: "\(table.name): a row id must have 1 to \(Self.maximumIDLength) bytes")
        }
        let values = change.values ?? [:]
        guard change.clocks == nil else {
            throw SyncErrorBody(.invalid, message: "\(table.name) \(change.id): a pushed change carries no clocks (its transaction's clock stands)")
        }
        switch change.op {
        case .leave:
            throw SyncErrorBody(.invalid, message: "\(table.name) \(change.id): 'leave' is a row leaving a device's subset, never pushed")
        case .delete:
            guard values.isEmpty else {
                throw SyncErrorBody(.invalid, message: "\(table.name) \(change.id): a delete carries no values")
            }
            return SyncChange(table: table.name, id: change.id, op: .delete, values: change.values)
        case .update:
            guard !values.isEmpty else {
                throw SyncErrorBody(.invalid, message: "\(table.name) \(change.id): an update without values")
            }
        case .insert:
            for column in table.columns where !column.hasDefault && !column.isNullable {
                guard values[column.name] != nil || values.keys.contains(where: { Self.sameName($0, column.name) }) else {
                    throw SyncErrorBody(.invalid, message: "\(table.name) \(change.id): an insert without '\(column.name)', which is NOT NULL")
                }
            }
        }
        // Names as the schema spells them (what devices send): the values stand as they are,
        // checked; rebuilding each change's dictionary was as long as decoding the push.
        var spelled = true
        for (name, value) in values {
            guard let column = table.column(named: name) else {
                throw SyncErrorBody(.invalid, message: "\(table.name) \(change.id): unknown column '\(name)'")
            }
            guard Self.accepts(column, value) else { throw Self.refusal(of: value, in: column, of: table, change.id) }
            spelled = spelled && column.name == name
        }
        if spelled { return SyncChange(table: table.name, id: change.id, op: change.op, values: change.values) }
        var normalized: [String: SyncValue] = Dictionary(minimumCapacity: values.count)
        for (name, value) in values {
            guard let column = table.column(named: name) else {
                throw SyncErrorBody(.invalid, message: "\(table.name) \(change.id): unknown column '\(name)'")
            }
            guard normalized.updateValue(value, forKey: column.name) == nil else {
                throw SyncErrorBody(.invalid, message: "\(table.name) \(change.id): column '\(column.name)' appears twice (names differ only in case)")
            }
        }
        return SyncChange(table: table.name, id: change.id, op: change.op, values: normalized)
    }

    private static func refusal(of value: SyncValue, in column: Column, of table: Table, _ id: String) -> SyncErrorBody {
        let wanted = column.isAttachment ? "an attachment (its hash; the bytes go in chunks)" : column.references.map { "a reference to \($0)" } ?? column.type.rawValue
        return SyncErrorBody(.invalid, message: "\(table.name).\(column.name) of \(id): \(value.typeName) where the schema wants \(wanted)\(column.isNullable ? " or null" : "")")
    }

    private static func accepts(_ column: Column, _ value: SyncValue) -> Bool {
        if case .null = value { return column.isNullable }
        if column.isAttachment {
            if case .attachment = value { return true }
            return false
        }
        if column.references != nil {
            if case .reference(let id) = value { return !id.isEmpty && id.utf8.count <= maximumIDLength }
            return false
        }
        switch (column.type, value) {
        case (_, .reference), (_, .attachment): return false
        case (.any, _): return true
        case (.integer, .integer), (.integer, .real), (.real, .integer), (.real, .real): return true
        case (.numeric, .integer), (.numeric, .real), (.numeric, .text): return true
        case (.text, .text), (.blob, .blob): return true
        default: return false
        }
    }
}
