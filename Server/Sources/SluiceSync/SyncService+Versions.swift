import Foundation
import Hummingbird
import HTTPTypes
import SluiceSyncProtocol

/// Schema versions: each device pushes and pulls in its own version's names; the service
/// stores the newest version's.
extension SyncService {
    static let schemaVersionHeader = HTTPField.Name("Sluice-Schema-Version")

    /// The version a request says it speaks (nil: none, or not a number).
    static func schemaVersion(_ request: Request) -> Int? {
        schemaVersionHeader.flatMap { request.headers[$0] }.flatMap { Int($0) }
    }

    /// A pushed change, checked against the device's version and named as the newest one
    /// names it. A device that says no version may push what any version accepts (the
    /// newest is tried first).
    func normalized(_ change: SyncChange, version: Int?) throws(SyncErrorBody) -> SyncChange {
        guard let versions = configuration.schemaVersions else { return try configuration.schema.normalized(change) }
        if let version { return try versions.upgrade(change, from: version) }
        var refusal: SyncErrorBody?
        for candidate in versions.versions.reversed() {
            do { return try versions.upgrade(change, from: candidate.version) } catch { refusal = refusal ?? error }
        }
        throw refusal ?? SyncErrorBody(.invalid, message: "no schema version accepts this change")
    }

    /// Stored changes as the device's version sees them (nil when it is the newest or not said).
    func downgrading(_ changes: [SyncChange], for version: Int?) -> [SyncChange]? {
        guard let versions = configuration.schemaVersions, let version, version != versions.versions.last?.version else { return nil }
        return changes.compactMap { versions.downgrade($0, to: version) }
    }

    /// A pull's body (as stored) in the device's version's names.
    func downgrading(pull body: Data, for version: Int?) throws -> Data {
        guard configuration.schemaVersions != nil, let version, version != configuration.schemaVersions?.versions.last?.version else { return body }
        var page = try JSONDecoder().decode(PullResponse.self, from: body)
        for index in page.transactions.indices {
            page.transactions[index].changes = downgrading(page.transactions[index].changes, for: version) ?? page.transactions[index].changes
        }
        return try JSONEncoder().encode(page)
    }
}
