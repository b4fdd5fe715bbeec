import Foundation
import OpenCombineShim
import SluiceSyncClient
import SluiceViewModels
import Sluice

/// The conflict inbox as a screen: what sync decided against on this device, a one-line
/// summary for a banner ("2 edits were replaced by newer ones — review"), and restore and
/// dismiss per record. The list is live (`SyncClient.conflicts`): records arrive as
/// syncs decide, and go as they are restored or dismissed, here or by another process.
///
/// ```swift
/// let inbox = ConflictInboxModel(client: client)
/// if let banner = inbox.summary { showBanner(banner) }
/// await inbox.restore(inbox.items[0])
/// ```
@MainActor
public final class ConflictInboxModel: ObservableObject {
    /// One record, as a row of the inbox shows it.
    public struct Item: Identifiable, Equatable, Sendable {
        public var id: Int64
        /// What it is about: `person 3 · city`.
        public var title: String
        /// What happened, in words.
        public var text: String
        /// The record.
        public var conflict: SyncConflict
    }

    /// The records, oldest first, live.
    public let conflicts: ObservableArray<Item>
    /// The last error from a restore or a dismissal, for an alert.
    @Published public private(set) var lastError: StoreError?

    private let client: SyncClient

    /// The inbox of `client`'s store; `items` holds its records at once.
    ///
    /// - Parameter client: the store's sync client.
    public init(client: SyncClient) {
        self.client = client
        conflicts = ObservableArray(client.conflicts) { Self.item($0) }
    }

    /// The rows of the inbox (`conflicts.items`).
    public var items: [Item] { conflicts.items }

    /// A banner's line: how many of each kind, then "— review"; nil when the inbox is empty.
    public var summary: String? {
        Self.summary(of: items.map(\.conflict))
    }

    /// Writes back what the record lost (it wins and syncs), and removes it.
    public func restore(_ item: Item) async {
        await run { try await $0.restore(item.conflict) }
    }

    /// Removes the record: what it lost stays lost.
    public func dismiss(_ item: Item) async {
        await run { try await $0.dismiss(item.conflict) }
    }

    private func run(_ action: @Sendable (SyncClient) async throws -> Void) async {
        do {
            try await action(client)
            lastError = nil
        } catch let error as StoreError {
            lastError = error
        } catch {
            lastError = StoreError(code: .error, message: "\(error)")
        }
    }

    /// The summary of `conflicts`, kind by kind.
    public nonisolated static func summary(of conflicts: [SyncConflict]) -> String? {
        guard !conflicts.isEmpty else { return nil }
        func count(_ kinds: Set<SyncConflict.Kind>) -> Int { conflicts.filter { kinds.contains($0.kind) }.count }
        func phrase(_ count: Int, _ one: String, _ many: String) -> String? { count == 0 ? nil : "\(count) \(count == 1 ? one : many)" }
        let parts = [
            phrase(count([.column, .merge]), "edit was replaced by a newer one", "edits were replaced by newer ones"),
            phrase(count([.editLostToDelete]), "edit was lost to a delete", "edits were lost to deletes"),
            phrase(count([.deleteLostToEdit]), "delete was undone by an edit", "deletes were undone by edits"),
            phrase(count([.quarantined]), "change could not be applied", "changes could not be applied"),
        ].compactMap { $0 }
        return parts.joined(separator: "; ") + " — review"
    }

    /// A record as a row.
    public nonisolated static func item(_ conflict: SyncConflict) -> Item {
        let title = "\(conflict.table) \(conflict.rowID)" + (conflict.column.map { " · \($0)" } ?? "")
        let text: String = switch conflict.kind {
        case .column: "kept \(conflict.kept.value), replaced \(conflict.lost.value)"
        case .merge: "merged into \(conflict.kept.value), from \(conflict.lost.value)"
        case .editLostToDelete: "deleted; the edit was lost"
        case .deleteLostToEdit: "kept; its delete was undone"
        case .quarantined: "not applied: \(conflict.detail ?? "")"
        }
        return Item(id: conflict.id ?? 0, title: title, text: text, conflict: conflict)
    }
}
