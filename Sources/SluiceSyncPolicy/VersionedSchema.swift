import SluiceSyncProtocol

/// The service's rules for the schema versions devices speak: a pushed change is checked
/// against the device's version and stored in the newest one's names; a device is sent the
/// history and rows in its own version's names; a device of an older version leaves the
/// columns it does not know as they are. One schema (no versions) is the same rules with
/// one version that every device speaks. The PostgreSQL service and the in-memory one both
/// decide by it.
public struct VersionedSchema: Sendable {
    /// The newest schema: how every change is stored.
    public let newest: SyncSchema
    /// The registered versions (nil: the one schema).
    public let versions: SyncSchemaVersions?

    /// One schema, no versions.
    public init(_ schema: SyncSchema) {
        newest = schema
        versions = nil
    }

    /// Several versions; the newest is how changes are stored.
    public init(_ versions: SyncSchemaVersions) {
        newest = versions.newest
        self.versions = versions
    }

    /// A pushed change, checked against the device's `version` and named as the newest
    /// version names it. A device that says no version may push what any version accepts
    /// (the newest is tried first).
    ///
    /// - Throws: `invalid` naming what the version (or, unsaid, every version) does not
    ///   accept, or an unknown version.
    public func accepted(_ change: SyncChange, from version: Int?) throws(SyncErrorBody) -> SyncChange {
        guard let versions else { return try newest.normalized(change) }
        if let version { return try versions.upgrade(change, from: version) }
        var refusal: SyncErrorBody?
        for candidate in versions.versions.reversed() {
            do { return try versions.upgrade(change, from: candidate.version) } catch { refusal = refusal ?? error }
        }
        throw refusal ?? SyncErrorBody(.invalid, message: "no schema version accepts this change")
    }

    /// Stored changes as a device of `version` sees them: in its names, without what it does
    /// not have (nil: as stored, for the newest version or none said).
    public func downgraded(_ changes: [SyncChange], for version: Int?) -> [SyncChange]? {
        guard let versions, let version, isOlder(version) else { return nil }
        return changes.compactMap { versions.downgrade($0, to: version) }
    }

    /// Whether a device of `version` sees stored changes in other names than they are
    /// stored in (nil: none said; the newest: no).
    public func isOlder(_ version: Int?) -> Bool {
        guard let versions, let version else { return false }
        return version != versions.versions.last?.version
    }

    /// The columns a push of a device of `version` leaves as they are (those it does not
    /// know), by table: ``PushRows/keepingUnknownColumns(_:keep:rows:)`` keeps them.
    public func keptColumns(for version: Int?) -> [String: Set<String>] {
        version.flatMap { versions?.unknownColumns(to: $0) } ?? [:]
    }
}
