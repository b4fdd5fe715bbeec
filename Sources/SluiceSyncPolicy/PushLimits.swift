import SluiceSyncProtocol

/// The service's limits on one push: its body's bytes and its transactions. Over either,
/// the push is refused with `too_large` (413), and the device sends fewer transactions at a
/// time (one transaction over the body limit cannot be split: its error stands).
public enum PushLimits {
    /// The refusal of a body over `maximum` bytes (a push's, or another route's own limit).
    public static func bodyTooLarge(maximum: Int) -> SyncErrorBody {
        SyncErrorBody(.tooLarge, message: "the body is larger than \(maximum) bytes")
    }

    /// - Throws: `too_large` when `request` has more than `maximumTransactions` transactions.
    public static func check(_ request: PushRequest, maximumTransactions: Int) throws(SyncErrorBody) {
        guard request.transactions.count <= maximumTransactions else {
            throw SyncErrorBody(.tooLarge, message: "more than \(maximumTransactions) transactions in one push")
        }
    }
}
