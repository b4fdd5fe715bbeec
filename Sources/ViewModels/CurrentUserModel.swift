import Foundation
import OpenCombineShim
import Store

/// Shared app state: who the current user is, held in the store's
/// `app_state` row so every view model (and every process) sees the same.
@MainActor
public final class CurrentUserModel: ObservableObject {
    /// The signed-in person, or nil.
    @Published public private(set) var currentUser: Person?
    /// The last error from a write.
    @Published public private(set) var lastError: StoreError?

    private let store: Store
    private var cancellables = Set<AnyCancellable>()
    private var userSubscription: AnyCancellable?

    /// Follows the app state of `store`.
    public init(store: Store) {
        self.store = store
        store.propertyValuePublisher(AppState.self, id: AppState.singletonID, \.currentUserID)
            .sink { @Sendable [weak self] id in
                DispatchQueue.main.async { MainActor.assumeIsolated { self?.follow(id) } }
            }
            .store(in: &cancellables)
    }

    private func follow(_ id: Int64?) {
        userSubscription = nil
        guard let id else {
            currentUser = nil
            return
        }
        userSubscription = store.objectValuePublisher(Person.self, id: id)
            .sink { @Sendable [weak self] person in
                DispatchQueue.main.async { MainActor.assumeIsolated { self?.currentUser = person } }
            }
    }

    /// Makes a person the current user (nil signs out).
    public func setCurrentUser(_ id: Int64?) {
        do {
            try store.write { tx in
                try tx.execute(sql: "UPDATE app_state SET current_user_id = ? WHERE id = ?",
                               arguments: [id.sqliteValue, .integer(AppState.singletonID)])
            }
        } catch {
            lastError = error as? StoreError
        }
    }
}
