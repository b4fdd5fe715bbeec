import Foundation
import Hummingbird

/// The answers of requests the service took in the background (`Prefer: respond-async`,
/// RFC 7240): answered `202 Accepted` once their body was in, with `Location:
/// /v1/answers/<id>`, where the caller fetches the answer (`GET`, waiting for it).
///
/// Why: Foundation's URLSession on Linux (swift-corelibs-foundation over libcurl) keeps a
/// socket's write source after a request body of more than 64 KiB is sent, and spins on it
/// until the answer arrives. A first upload's parts and attachment chunks wait for
/// PostgreSQL with such bodies; answered at once, they stop spinning (about a third of a
/// device's CPU over its first push, 2026-12-04).
///
/// An answer is held by the instance that took the request: one that is unknown here (a
/// restart, another instance behind the same address, fetched already, or older than
/// ``keepFor``) is `answer_unknown`, and the caller sends its request again (every request
/// is safe to repeat).
final class DeferredAnswers: @unchecked Sendable {
    // @unchecked Sendable: `entries` is guarded by `lock`.
    private let lock = NSLock()
    private var entries: [String: Entry] = [:]
    /// Waiters woken before they began to wait (a timer or a cancellation that came first).
    private var woken: Set<UUID> = []
    private let clock = ContinuousClock()

    private struct Entry {
        /// Who may fetch it: the caller that made the request.
        let space: Int64
        let token: String
        let opened: ContinuousClock.Instant
        var answer: Response?
        var waiters: [UUID: CheckedContinuation<Void, Never>] = [:]
    }

    /// How long an answer nobody fetched is held, from its request.
    static let keepFor: Duration = .seconds(300)

    /// What ``take(_:space:token:waiting:)`` found.
    enum Taken {
        case answer(Response)
        /// Still being worked on.
        case pending
        case unknown
    }

    /// An answer to come for a request of `space` by `token`: its id.
    func open(space: Int64, token: String) -> String {
        let id = UUID().uuidString.lowercased()
        let now = clock.now
        let stale: [CheckedContinuation<Void, Never>] = lock.withLock {
            var stale: [CheckedContinuation<Void, Never>] = []
            if entries.count > 1_000 {
                for (key, entry) in entries where now - entry.opened > Self.keepFor {
                    stale += entry.waiters.values
                    entries[key] = nil
                }
            }
            entries[id] = Entry(space: space, token: token, opened: now)
            return stale
        }
        stale.forEach { $0.resume() }
        return id
    }

    /// The request's answer is ready: wakes whoever waits for it.
    func finish(_ id: String, with answer: Response) {
        let waiters: [CheckedContinuation<Void, Never>] = lock.withLock {
            guard var entry = entries[id] else { return [] }
            let waiting = Array(entry.waiters.values)
            entry.answer = answer
            entry.waiters = [:]
            entries[id] = entry
            return waiting
        }
        waiters.forEach { $0.resume() }
    }

    /// The answer `id` for this caller, waiting up to `waiting` for it; taken once.
    func take(_ id: String, space: Int64, token: String, waiting: Duration) async -> Taken {
        let deadline = clock.now + waiting
        while true {
            let waiter = UUID()
            let (found, others): (Taken, [CheckedContinuation<Void, Never>]) = lock.withLock {
                guard let entry = entries[id], entry.space == space, entry.token == token,
                      clock.now - entry.opened <= Self.keepFor else { return (.unknown, []) }
                guard let answer = entry.answer else { return (.pending, []) }
                entries[id] = nil
                return (.answer(answer), Array(entry.waiters.values))
            }
            // Another fetch of the same answer waiting meanwhile finds it gone.
            others.forEach { $0.resume() }
            guard case .pending = found, clock.now < deadline, !Task.isCancelled else { return found }
            // Woken by finish, or by a timer at the deadline (or on cancellation).
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    await withTaskCancellationHandler {
                        await withCheckedContinuation { continuation in
                            let waiting = self.lock.withLock {
                                guard self.woken.remove(waiter) == nil, self.entries[id] != nil, self.entries[id]?.answer == nil else { return false }
                                self.entries[id]?.waiters[waiter] = continuation
                                return true
                            }
                            if !waiting { continuation.resume() }
                        }
                    } onCancel: {
                        self.wake(id, waiter)
                    }
                }
                group.addTask {
                    try? await Task.sleep(until: deadline, clock: ContinuousClock())
                    self.wake(id, waiter)
                }
                await group.next()
                group.cancelAll()
            }
            lock.withLock { _ = woken.remove(waiter) }
        }
    }

    /// Resumes one waiter, or marks it woken when it has not begun to wait.
    private func wake(_ id: String, _ waiter: UUID) {
        let continuation: CheckedContinuation<Void, Never>? = lock.withLock {
            if let continuation = entries[id]?.waiters.removeValue(forKey: waiter) { return continuation }
            woken.insert(waiter)
            return nil
        }
        continuation?.resume()
    }
}
