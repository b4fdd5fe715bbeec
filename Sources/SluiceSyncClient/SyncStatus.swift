import Foundation
import Observation

/// A sync client's state for SwiftUI and other Observation users: `status`,
/// `pendingChangeCount`, `lastSync` and `cursor` follow ``SyncClient/updates`` on the main actor.
///
/// ```swift
/// @State var sync = SyncStatus(client)
/// Text(sync.pendingChangeCount == 0 ? "Up to date" : "\(sync.pendingChangeCount) to send")
/// ```
@MainActor
@Observable
public final class SyncStatus {
    /// What the client is doing.
    public private(set) var status: SyncClient.Status = .idle
    /// Local transactions not pushed yet.
    public private(set) var pendingChangeCount = 0
    /// When the last sync completed.
    public private(set) var lastSync: Date?
    /// The last history sequence pulled.
    public private(set) var cursor: Int64 = 0
    /// Pulled transactions this device could not apply, set aside.
    public private(set) var quarantinedCount = 0

    // nonisolated(unsafe): set once in init, read by deinit only.
    @ObservationIgnored nonisolated(unsafe) private var task: Task<Void, Never>?

    /// Follows `client` until this object is released.
    ///
    /// - Parameter client: the client to follow.
    public init(_ client: SyncClient) {
        let updates = client.updates
        task = Task { [weak self] in
            for await snapshot in updates {
                guard let self else { return }
                self.apply(snapshot)
            }
        }
    }

    deinit { task?.cancel() }

    private func apply(_ snapshot: SyncClient.Snapshot) {
        if status != snapshot.status { status = snapshot.status }
        if pendingChangeCount != snapshot.pendingChangeCount { pendingChangeCount = snapshot.pendingChangeCount }
        if lastSync != snapshot.lastSync { lastSync = snapshot.lastSync }
        if cursor != snapshot.cursor { cursor = snapshot.cursor }
        if quarantinedCount != snapshot.quarantinedCount { quarantinedCount = snapshot.quarantinedCount }
    }
}
