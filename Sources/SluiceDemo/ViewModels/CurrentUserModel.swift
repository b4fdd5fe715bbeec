import Foundation
import OpenCombineShim
import SluiceViewModels
import Sluice

/// Shared app state: who the current user is, held in the store's
/// `app_state` row so every view model (and every process) sees the same.
@MainActor
public final class CurrentUserModel: ObservableObject {
    /// The signed-in person, or nil.
    @Published public private(set) var currentUser: Person?
    /// The last error from a write.
    @Published public private(set) var lastError: StoreError?

    private let store: Store
    private let writes: WriteQueue
    private var cancellables = Set<AnyCancellable>()
    private var userSubscription: AnyCancellable?

    /// Follows the app state of `store`.
    ///
    /// - Parameter store: the store.
    public init(store: Store) {
        self.store = store
        writes = WriteQueue(store: store)
        writes.failed = { [weak self] error in self?.lastError = error }
        // Named first: in AppState's own module, Swift 6.3 does not convert
        // `AppState.singletonID` to `AppState.ID` inside this generic call.
        let row: AppState.ID = AppState.singletonID
        store.propertyValuePublisher(AppState.self, id: row, \.currentUserID)
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

    /// Makes a person the current user (nil signs out); returns when stored
    /// (`lastError` holds the error when that failed).
    ///
    /// - Parameter id: the person's id, or nil to sign out.
    public func setCurrentUser(_ id: Int64?) async {
        await writes.perform { tx in
            try tx.update(AppState.self, id: AppState.singletonID) { $0.currentUserID = id }
        }
    }
}
