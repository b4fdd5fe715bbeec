import Foundation

/// The registered schema's versions, oldest first: devices of several app versions share a
/// space. The service stores every change in the newest version's names; a device says its
/// version (the `Sluice-Schema-Version` header) and pushes and pulls in its own names.
///
/// A version may add tables and columns (an older device never receives them, and its edits
/// leave them as they are) and rename columns (`renamed`: the old name → the new one, declared
/// by the version that renames).
public struct SyncSchemaVersions: Sendable, Hashable, Codable {
    /// One version.
    public struct Version: Sendable, Hashable, Codable {
        /// Its number (the app's schema version; increasing).
        public var version: Int
        /// Its tables.
        public var schema: SyncSchema
        /// Columns this version renamed, by table: the previous version's name → this one's.
        public var renamed: [String: [String: String]]?

        /// A version.
        ///
        /// - Parameters:
        ///   - version: its number.
        ///   - schema: its tables.
        ///   - renamed: columns it renamed, by table: old name → new name.
        public init(version: Int, schema: SyncSchema, renamed: [String: [String: String]]? = nil) {
            self.version = version
            self.schema = schema
            self.renamed = renamed
        }
    }

    /// The versions, oldest first.
    public var versions: [Version]

    /// Versions.
    ///
    /// - Parameter versions: the versions, oldest first, numbers increasing.
    /// - Throws: `SyncErrorBody` (`invalid_schema`) for none, or numbers out of order.
    public init(_ versions: [Version]) throws(SyncErrorBody) {
        guard !versions.isEmpty else { throw SyncErrorBody(.invalidSchema, message: "no schema version") }
        for (earlier, later) in zip(versions, versions.dropFirst()) where later.version <= earlier.version {
            throw SyncErrorBody(.invalidSchema, message: "schema versions must increase: \(later.version) after \(earlier.version)")
        }
        self.versions = versions
    }

    /// The newest version's schema: how the service stores every change.
    public var newest: SyncSchema { versions[versions.count - 1].schema }

    /// The version numbered `number`, or nil.
    public func version(_ number: Int) -> Version? { versions.first { $0.version == number } }

    /// A change in version `number`'s names, checked against it, in the newest version's names.
    ///
    /// - Throws: `SyncErrorBody` (`invalid`) for what that version does not accept, or an
    ///   unknown version.
    public func upgrade(_ change: SyncChange, from number: Int) throws(SyncErrorBody) -> SyncChange {
        guard let start = versions.firstIndex(where: { $0.version == number }) else {
            throw SyncErrorBody(.invalid, message: "unknown schema version \(number) (known: \(versions.map { String($0.version) }.joined(separator: ", ")))")
        }
        var change = try versions[start].schema.normalized(change)
        for later in versions[(start + 1)...] {
            guard let renames = later.renamed?.first(where: { SyncSchema.sameName($0.key, change.table) })?.value else { continue }
            change.values = change.values.map { values in
                Dictionary(values.map { (renames[$0.key] ?? $0.key, $0.value) }, uniquingKeysWith: { _, last in last })
            }
        }
        return change
    }

    /// The newest version's columns that version `number` does not have, by table (newest
    /// names; a column it has under an older name is one it has): what its writes must
    /// leave as they are. Empty for the newest version or an unknown one.
    public func unknownColumns(to number: Int) -> [String: Set<String>] {
        guard let start = versions.firstIndex(where: { $0.version == number }), let newest = versions.last, start < versions.count - 1 else { return [:] }
        var unknown: [String: Set<String>] = [:]
        for table in newest.schema.tables {
            guard let own = versions[start].schema.table(named: table.name) else { continue }
            var known = Set(own.columns.map { $0.name.lowercased() })
            for later in versions[(start + 1)...] {
                guard let renames = later.renamed?.first(where: { SyncSchema.sameName($0.key, table.name) })?.value else { continue }
                for (old, new) in renames where known.remove(old.lowercased()) != nil { known.insert(new.lowercased()) }
            }
            let missing = table.columns.map(\.name).filter { !known.contains($0.lowercased()) }
            if !missing.isEmpty { unknown[table.name.lowercased()] = Set(missing) }
        }
        return unknown
    }

    /// A stored change (newest names) as version `number` sees it: renamed columns under
    /// their old names, and nothing that version does not have (nil: a table it does not have).
    public func downgrade(_ change: SyncChange, to number: Int) -> SyncChange? {
        guard let target = versions.firstIndex(where: { $0.version == number }), target < versions.count - 1 else { return change }
        var change = change
        for later in versions[(target + 1)...].reversed() {
            guard let renames = later.renamed?.first(where: { SyncSchema.sameName($0.key, change.table) })?.value else { continue }
            let back = Dictionary(renames.map { ($0.value, $0.key) }, uniquingKeysWith: { first, _ in first })
            change.values = change.values.map { values in
                Dictionary(values.map { (back[$0.key] ?? $0.key, $0.value) }, uniquingKeysWith: { _, last in last })
            }
            change.clocks = change.clocks.map { clocks in
                Dictionary(clocks.map { (back[$0.key] ?? $0.key, $0.value) }, uniquingKeysWith: { _, last in last })
            }
        }
        guard let table = versions[target].schema.table(named: change.table) else { return nil }
        change.values = change.values?.filter { table.column(named: $0.key) != nil }
        change.clocks = change.clocks?.filter { table.column(named: $0.key) != nil }
        // An update of columns this version does not have changes nothing it has.
        if change.op == .update, change.values?.isEmpty ?? true { return nil }
        return change
    }
}
