import Foundation
import Hummingbird
import HTTPTypes
import SluiceSyncPolicy
import SluiceSyncProtocol

/// Schema versions: each device pushes and pulls in its own version's names (the rules:
/// ``VersionedSchema``); the service stores the newest version's.
extension SyncService {
    static let schemaVersionHeader = HTTPField.Name("Sluice-Schema-Version")

    /// The version a request says it speaks (nil: none, or not a number).
    static func schemaVersion(_ request: Request) -> Int? {
        schemaVersionHeader.flatMap { request.headers[$0] }.flatMap { Int($0) }
    }

    /// A pull's body (as stored) in the device's version's names.
    func downgrading(pull body: Data, for version: Int?) throws -> Data {
        guard versioned.isOlder(version) else { return body }
        var page = try JSONDecoder().decode(PullResponse.self, from: body)
        for index in page.transactions.indices {
            page.transactions[index].changes = versioned.downgraded(page.transactions[index].changes, for: version) ?? page.transactions[index].changes
        }
        return try JSONEncoder().encode(page)
    }
}
