import Sluice

/// A view model's writes: each runs with `try await store.write { }`, so the
/// main thread never waits for the writer, and they run one after another in
/// the order the view model asked for them (two quick edits of one field
/// never land in the wrong order).
@MainActor
final class WriteQueue {
    private let store: Store
    private var tail: Task<Void, Never>?
    /// The change-log author of these writes (so a view model can find its own transactions).
    var author: String?
    /// Hears each failed write's error (a view model shows it in `lastError`).
    var failed: @MainActor (StoreError) -> Void = { _ in }

    /// Writes to `store`.
    init(store: Store) {
        self.store = store
    }

    /// Runs `body` after the writes asked for before it and returns its
    /// result, or nil when it failed (`failed` has the error then).
    @discardableResult
    func perform<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async -> T? {
        await schedule(body).value
    }

    /// Asks for a write without waiting for it (for edits bound to fields).
    func enqueue(_ body: @escaping @Sendable (Database) throws -> Void) {
        schedule(body)
    }

    /// Queues the write behind the current tail at once (synchronously, so
    /// the order is the order of the calls) and returns its task.
    @discardableResult
    private func schedule<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) -> Task<T?, Never> {
        let previous = tail
        let store = store
        let author = author
        let write = Task { () async -> T? in
            await previous?.value
            do {
                return try await store.write { tx in
                    if let author { tx.transactionAuthor = author }
                    return try body(tx)
                }
            } catch {
                self.failed(error as? StoreError ?? StoreError(code: .invalidUse, message: "\(error)"))
                return nil
            }
        }
        tail = Task { _ = await write.value }
        return write
    }

    /// Runs work that makes its own transaction (a revert) after the writes
    /// asked for before it.
    func performOutside<T: Sendable>(_ work: @escaping @Sendable (Store) throws -> T) async -> T? {
        let previous = tail
        let store = store
        let task = Task { () async -> T? in
            await previous?.value
            do {
                return try await Task.detached { try work(store) }.value
            } catch {
                self.failed(error as? StoreError ?? StoreError(code: .invalidUse, message: "\(error)"))
                return nil
            }
        }
        tail = Task { _ = await task.value }
        return await task.value
    }

    /// Waits until every write asked for so far has finished.
    func idle() async {
        while let current = tail {
            await current.value
            if tail == current { return }
        }
    }
}
