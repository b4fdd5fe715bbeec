import Foundation
import SluiceSyncProtocol

/// What the service checks of a push before deciding it: the device id, the order of the
/// transactions' numbers, and each change against the registered schema (names as the
/// schema spells them, values of the columns' types, NOT NULL, references).
public enum PushRequestChecks {
    /// Whether `device` can name a device: 1 to 64 ASCII letters, digits, `.`, `_` or `-`,
    /// and not the service's own (``DeleteActions/serviceDevice``).
    public static func isValidDevice(_ device: String) -> Bool {
        !device.isEmpty && device.utf8.count <= 64 && device != DeleteActions.serviceDevice
            && device.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._-".unicodeScalars.contains($0)) }
    }

    /// Throws unless `device` can name a device (``isValidDevice(_:)``).
    ///
    /// - Throws: `SyncErrorBody` (`invalid`) saying what a device id is.
    public static func checkDevice(_ device: String) throws(SyncErrorBody) {
        guard isValidDevice(device) else {
            throw SyncErrorBody(.invalid, message: "device ids have 1 to 64 letters, digits, '.', '_' or '-'")
        }
    }

    /// `push` with every change as `normalize` gives it (the schema's `normalized`, or a
    /// schema version's upgrade).
    ///
    /// - Throws: `SyncErrorBody` (`invalid`) naming the transaction (its index and number)
    ///   and what does not fit.
    public static func checked(_ push: PushRequest, normalize: (SyncChange) throws(SyncErrorBody) -> SyncChange) throws(SyncErrorBody) -> PushRequest {
        try checkDevice(push.device)
        var push = push
        var previous: Int64 = .min
        for (index, transaction) in push.transactions.enumerated() {
            guard transaction.local > previous else {
                throw SyncErrorBody(.invalid, message: "transaction \(index) (local \(transaction.local)): a push's local numbers increase")
            }
            previous = transaction.local
            for (position, change) in transaction.changes.enumerated() {
                do {
                    push.transactions[index].changes[position] = try normalize(change)
                } catch {
                    throw SyncErrorBody(error.code, message: "transaction \(index) (local \(transaction.local)): \(error.message)")
                }
            }
        }
        return push
    }
}
