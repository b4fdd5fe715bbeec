import SluiceSyncProtocol

/// The part of a store's first upload sent before the part ahead of it is answered.
///
/// A part's time is mostly the service's: decoding and checking it, then folding it into
/// PostgreSQL. Sent one after the other, each part waited for the one before it to be
/// answered; sent ahead, its decoding and checks overlap the fold of the part before it (the
/// service takes a device's pushes one at a time, in the order their claims reach it). Only
/// a service that says it keeps a first upload's parts in order
/// (``PushResponse/keepsUploadOrder``) gets one: it refuses a part that overtook the one
/// before it (`out_of_order`), which is then sent again, and checks a part against what other
/// devices pushed alone, so the part keeps the base the part ahead of it was sent on.
///
/// A part sent ahead counts only when the part ahead of it was taken right after what this
/// store had pulled (`follows` is then that part's head); any other outcome waits for it and
/// forgets it, whatever the service answered: if it took the part, the pull that follows
/// brings it back and the upload goes on after it (``SyncEngine/uploadPartPulled(_:_:)``).
struct UploadPipeline {
    struct Sent {
        var push: SyncEngine.Push
        var answer: Task<SyncPushOutcome, any Error>
        /// The head the part goes right after, once the part ahead of it was taken there.
        var follows: Int64?
    }

    /// The part on its way ahead of its turn.
    var ahead: Sent?
    /// Whether the service said it keeps a first upload's parts in order.
    var ordered = false

    /// The part sent ahead when it is `push`, taken out of the pipeline.
    mutating func take(_ push: SyncEngine.Push) -> Sent? {
        guard let sent = ahead, sent.push.request.transactions.first?.local == push.request.transactions.first?.local,
              sent.push.request.device == push.request.device else { return nil }
        ahead = nil
        return sent
    }

    /// Waits for the part sent ahead to be answered, and forgets it.
    mutating func settle() async {
        guard let sent = ahead else { return }
        ahead = nil
        _ = try? await sent.answer.value
    }
}
